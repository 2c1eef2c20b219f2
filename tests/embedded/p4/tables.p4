// Match kinds, priorities, const entries, default actions, hit/miss and action_run
// for the embedded target's unit tests.  Frames: Ethernet (type 0x88b5) + test header.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header test_t {
    bit<8> a; bit<16> b; bit<32> c; bit<12> d; bit<4> e;   // d, e: not byte aligned
    bit<8> out_exact; bit<8> out_lpm; bit<8> out_ternary; bit<8> out_range;
    bit<8> out_const; bit<8> out_hit; bit<8> out_switch; bit<8> out_optional;
}
struct headers_t { ethernet_t ethernet; test_t t; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x88b5: parse_t; default: accept; }
    }
    state parse_t { pkt.extract(hdr.t); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action set_exact(bit<8> v) { hdr.t.out_exact = v; }
    action set_lpm(bit<8> v) { hdr.t.out_lpm = v; }
    action set_ternary(bit<8> v) { hdr.t.out_ternary = v; }
    action set_range(bit<8> v) { hdr.t.out_range = v; }
    action set_const(bit<8> v) { hdr.t.out_const = v; }
    action set_optional(bit<8> v) { hdr.t.out_optional = v; }
    action mark_a() { hdr.t.out_switch = 1; }
    action mark_b() { hdr.t.out_switch = 2; }
    action miss_default() { hdr.t.out_exact = 0xee; }

    table t_exact {
        key = { hdr.t.a: exact; hdr.t.d: exact; }
        actions = { set_exact; miss_default; }
        default_action = miss_default();
    }
    table t_lpm {
        key = { hdr.t.c: lpm; }
        actions = { set_lpm; NoAction; }
        default_action = NoAction();
    }
    table t_ternary {
        key = { hdr.t.b: ternary; hdr.t.e: exact; }
        actions = { set_ternary; NoAction; }
        default_action = NoAction();
    }
    table t_range {
        key = { hdr.t.b: range; }
        actions = { set_range; NoAction; }
        default_action = NoAction();
    }
    table t_const {
        key = { hdr.t.a: ternary; }
        actions = { set_const; NoAction; }
        const default_action = set_const(0x99);
        const entries = {
            0x01 &&& 0xff: set_const(0x11);
            0x00 &&& 0xf0: set_const(0x22);
            0x10 &&& 0xf0: set_const(0x33);
        }
    }
    table t_optional {
        key = { hdr.t.a: optional; hdr.t.e: optional; }
        actions = { set_optional; NoAction; }
        default_action = NoAction();
    }
    table t_switch {
        key = { hdr.t.a: exact; }
        actions = { mark_a; mark_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (!hdr.t.isValid()) { mark_to_drop(std); exit; }
        std.egress_spec = std.ingress_port;
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        t_const.apply();
        t_optional.apply();
        if (t_exact.apply().hit) { hdr.t.out_hit = 1; } else { hdr.t.out_hit = 2; }
        switch (t_switch.apply().action_run) {
            mark_a: { hdr.t.out_switch = hdr.t.out_switch + 0x10; }
            mark_b: { hdr.t.out_switch = hdr.t.out_switch + 0x20; }
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.t); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
