// Tables applied inside a switch inside a switch.  `inner` runs when `classify` ran
// set_port; `removed` sits behind a branch that constant folding rules out (as in p4c's
// gauntlet_nested_switch-bmv2 sample): p4c's mid end drops it from the bmv2 JSON while the
// P4Info, written from the front end's program, still lists it.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action set_port(bit<9> port) { std.egress_spec = port; }
    action drop() { mark_to_drop(std); }
    action set_type(bit<16> type) { hdr.eth.type = type; }
    table classify {
        key = { hdr.eth.dst: exact; }
        actions = { set_port; drop; }
        default_action = drop();
    }
    table inner {
        key = { hdr.eth.src: exact; }
        actions = { set_type; NoAction; }
        default_action = NoAction();
    }
    table removed {
        key = { hdr.eth.type: exact; }
        actions = { set_type; NoAction; }
        default_action = NoAction();
    }
    apply {
        bit<16> limit = 2;
        switch (classify.apply().action_run) {
            set_port: {
                switch (inner.apply().action_run) {
                    set_type: { hdr.eth.dst = 0xFFFFFFFFFFFF; }
                    default: { }
                }
                if (limit <= 5) {
                    return;
                }
                switch (removed.apply().action_run) {
                    default: { hdr.eth.dst = 0; }
                }
            }
            default: { }
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
