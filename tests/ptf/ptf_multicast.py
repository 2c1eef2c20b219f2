"""PTF: RESULT multicast through PRE groups with a per-replica destination rewrite."""

from __future__ import annotations

from ina_base import PS1, PS2, SWITCH_MAC, WORKERS, InaTest

from host_stack.ina import wire

JOB = 7


class ResultMulticast(InaTest):
    """A RESULT to the job's result address reaches every worker, addressed to it."""

    def runTest(self):
        self.add_host_routes()
        workers = WORKERS[:4]
        group, result_addr = 1, "10.0.200.7"
        self.client.insert_multicast_group(group, [(w.port, 100 + i)
                                                   for i, w in enumerate(workers)])
        for i, w in enumerate(workers):
            self.client.insert_table_entry(
                "InaEgress.result_rewrite", {"egress_rid": 100 + i}, "InaEgress.rewrite_result",
                {"dst_addr": w.ip, "dst_mac": w.mac, "src_mac": SWITCH_MAC})
        self.client.insert_table_entry(
            "InaIngress.result_multicast", {"job": JOB, "ps_addr": PS1.ip, "dst_addr": result_addr},
            "InaIngress.multicast", {"group": group})
        hdr = wire.InaHeader(type=wire.TYPE_RESULT, job=JOB, round=3, chunk=8, slot=1,
                             count=4, bitmap=0b1111, flags=wire.FLAG_AGGREGATED)
        vals = self.values(seed=5)
        self.send(PS1.port, self.ina(PS1.mac, SWITCH_MAC, PS1.ip, result_addr, hdr,
                                     vals, dport=wire.RESULT_PORT))
        self.expect_exactly([
            (w.port, self.ina(SWITCH_MAC, w.mac, PS1.ip, w.ip, hdr, vals, ttl=63,
                              checksum_zero=True, dport=wire.RESULT_PORT))
            for w in workers])
        # a unicast RESULT to one worker (answer to a late RETX) is routed, not replicated
        w1 = workers[0]
        self.send(PS1.port, self.ina(PS1.mac, SWITCH_MAC, PS1.ip, w1.ip, hdr, vals,
                                     dport=wire.RESULT_PORT))
        self.expect_exactly([(w1.port, self.ina(SWITCH_MAC, w1.mac, PS1.ip, w1.ip,
                                                hdr, vals, ttl=63, checksum_zero=True,
                                                dport=wire.RESULT_PORT))])
        # another PS's RESULT to the same address has no multicast entry: routed -> no route
        self.send(PS2.port, self.ina(PS2.mac, SWITCH_MAC, PS2.ip, result_addr, hdr,
                                     vals, dport=wire.RESULT_PORT))
        self.expect_nothing()
        self.assert_events(result_multicast=1, no_route_drop=1)


class UnknownReplicaDropped(InaTest):
    """A replica whose egress_rid has no result_rewrite entry is dropped, not sent as is."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[:2]
        self.client.insert_multicast_group(2, [(w1.port, 1), (w2.port, 2)])
        self.client.insert_table_entry(
            "InaEgress.result_rewrite", {"egress_rid": 1}, "InaEgress.rewrite_result",
            {"dst_addr": w1.ip, "dst_mac": w1.mac, "src_mac": SWITCH_MAC})
        self.client.insert_table_entry(
            "InaIngress.result_multicast", {"job": JOB, "ps_addr": PS1.ip, "dst_addr": PS2.ip},
            "InaIngress.multicast", {"group": 2})
        hdr = wire.InaHeader(type=wire.TYPE_RESULT, job=JOB, round=1, chunk=0, count=2,
                             bitmap=0b11)
        vals = self.values(seed=3)
        self.send(PS1.port, self.ina(PS1.mac, SWITCH_MAC, PS1.ip, PS2.ip, hdr, vals,
                                     dport=wire.RESULT_PORT))
        self.expect_exactly([(w1.port, self.ina(SWITCH_MAC, w1.mac, PS1.ip, w1.ip,
                                                hdr, vals, ttl=63, checksum_zero=True,
                                                dport=wire.RESULT_PORT))])
        self.assert_events(result_multicast=1)
        cell = self.client.read_counter("InaEgress.replica_drops", 0)
        self.assertEqual(cell.packets, 1, "InaEgress.replica_drops")

