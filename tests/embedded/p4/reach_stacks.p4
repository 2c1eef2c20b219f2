// Header stacks for the embedded target's reach tests: `next`/`last` in the parser (a stack of
// three tags ended by bos; a fourth is StackOutOfBounds), push_front/pop_front, run-time indices,
// a run-time read; parser errors shown in the EtherType.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> v; bit<8> bos; }
struct headers_t { eth_t eth; tag_t[3] tags; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x9000: tag; default: accept; }
    }
    state tag {
        pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.bos) { 0: tag; default: accept; }
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        std.egress_spec = 2;
        bit<8> op = hdr.eth.dst[7:0];
        if (op == 1) {
            hdr.tags.push_front(1);
            hdr.tags[0].setValid();
            hdr.tags[0].v = 0xAA;
            hdr.tags[0].bos = 0;
        } else if (op == 2) {
            hdr.tags.pop_front(1);
        } else if (op == 3) {
            hdr.tags[hdr.eth.src[1:0]].v = 0x55;
        } else if (op == 4) {
            hdr.eth.type = (bit<16>)hdr.tags[hdr.eth.src[0:0]].v;
        } else if (op == 5) {
            hdr.tags.push_front(2);
        } else if (op == 6) {
            hdr.tags.pop_front(2);
            hdr.tags[2].setValid();
        } else if (op == 7) {
            hdr.tags[1] = hdr.tags[0];
        }
        if (std.parser_error == error.StackOutOfBounds) {
            hdr.eth.type = 0xE003;
        } else if (std.parser_error == error.PacketTooShort) {
            hdr.eth.type = 0xE001;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tags); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
