// Const entries whose values have bits outside the mask or beyond the prefix (bmv2 masks them)
// and a table keyed on the parser error (type `error`), filled over P4Runtime (p4c's bmv2
// backend takes no const entries on error keys).
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<16> a; bit<32> b; bit<8> c; bit<8> d; }
struct headers_t { eth_t eth; h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88B5: h; default: accept; }
    }
    state h { pkt.extract(hdr.h); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action set_c(bit<8> v) { hdr.h.c = v; }
    action set_d(bit<8> v) { hdr.h.d = v; }
    table t_tern {
        key = { hdr.h.a: ternary; }
        actions = { set_c; NoAction; }
        const entries = {
            0x12FF &&& 0xFF00: set_c(1);
            0x0034 &&& 0x00F0: set_c(2);
        }
        default_action = NoAction();
    }
    table t_lpm {
        key = { hdr.h.b: lpm; }
        actions = { set_d; NoAction; }
        const entries = {
            0x0A0B0C0D &&& 0xFF000000: set_d(3);
            0x0B0CFFFF &&& 0xFFFF0000: set_d(4);
        }
        default_action = NoAction();
    }
    table t_err_rt {
        key = { std.parser_error: exact; }
        actions = { set_d; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.h.isValid()) {
            t_tern.apply();
            t_lpm.apply();
        }
        t_err_rt.apply();
        std.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
