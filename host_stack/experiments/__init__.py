"""Drivers of the papers' experiments (`inart experiment NAME`): selective reduce, PS load
balancing, and later the head-to-head comparison."""
