// Header unions for the embedded target's reach tests: a union u {a; b} chosen by EtherType;
// setValid on one member invalidates the other; isValid of the union.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header a_t { bit<16> x; }
header b_t { bit<8> y; bit<8> z; }
header_union u_t { a_t a; b_t b; }
struct headers_t { eth_t eth; u_t u; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0xA: pa; 0xB: pb; default: accept; }
    }
    state pa { pkt.extract(hdr.u.a); transition accept; }
    state pb { pkt.extract(hdr.u.b); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        std.egress_spec = 2;
        bit<8> op = hdr.eth.dst[7:0];
        if (op == 1) {
            hdr.u.b.setValid();
            hdr.u.b.y = 7;
            hdr.u.b.z = 9;
        } else if (op == 2) {
            hdr.u.a.setInvalid();
        } else if (op == 3) {
            hdr.eth.src = hdr.u.isValid() ? 48w1 : 48w0;
        } else if (op == 4) {
            hdr.u.a.setValid();
            hdr.u.a.x = 0x1234;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.u); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
