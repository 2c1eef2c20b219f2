"""The cluster and the plan: topologies and the inart.plan/1 format."""
