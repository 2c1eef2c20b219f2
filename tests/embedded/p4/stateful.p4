// Registers, counters, hashes, saturating and signed arithmetic, header validity, lookahead,
// parser errors, if inside actions, exit, multicast and egress drop for the embedded target's
// unit tests.  Frames: Ethernet (type 0x88b6) [+ marker if the next byte is 0xff] + s_t.
#include <core.p4>
#include <v1model.p4>

error { BadOp }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header marker_t { bit<8> m; bit<8> pad; }
header s_t {
    bit<8> op; bit<8> idx; bit<32> val; int<32> sval;
    bit<32> out1; bit<32> out2; bit<16> out3; bit<16> out4; int<32> out5;
}
header extra_t { bit<8> x; bit<8> y; }
struct headers_t { ethernet_t ethernet; marker_t marker; s_t s; extra_t extra; }
struct meta_t { bit<32> tmp; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x88b6: check_marker; default: accept; }
    }
    state check_marker {
        transition select(pkt.lookahead<bit<8>>()) { 0xff: parse_marker; default: parse_s; }
    }
    state parse_marker { pkt.extract(hdr.marker); transition parse_s; }
    state parse_s {
        pkt.extract(hdr.s);
        verify(hdr.s.op != 0xee, error.BadOp);
        transition select(hdr.s.op) { 5: parse_extra; default: accept; }
    }
    state parse_extra { pkt.extract(hdr.extra); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<32>>(16) acc;
    counter(16, CounterType.packets_and_bytes) seen;

    action cond_act() {
        if (hdr.s.val > 100) { hdr.s.out1 = 1; } else { hdr.s.out1 = 2; }
        hdr.s.out2 = hdr.s.val + 7;
    }

    apply {
        if (std.parser_error != error.NoError) {
            // report the parser error in a fresh header and send the frame back
            hdr.extra.setValid();
            hdr.extra.x = 0xe0;
            hdr.extra.y = (std.parser_error == error.BadOp) ? 8w1 :
                          ((std.parser_error == error.PacketTooShort) ? 8w2 : 8w3);
            std.egress_spec = std.ingress_port;
            exit;
        }
        if (!hdr.s.isValid()) { mark_to_drop(std); exit; }
        std.egress_spec = std.ingress_port;
        seen.count((bit<32>)hdr.s.idx);
        if (hdr.s.op == 1) {
            bit<32> old;
            acc.read(old, (bit<32>)hdr.s.idx);
            hdr.s.out1 = old;
            acc.write((bit<32>)hdr.s.idx, old + hdr.s.val);
        } else if (hdr.s.op == 2) {
            hash(hdr.s.out3, HashAlgorithm.crc16, 16w0, { hdr.s.val, hdr.s.idx }, 32w65536);
            hash(hdr.s.out1, HashAlgorithm.crc32, 32w0, { hdr.s.val, hdr.s.idx },
                 33w0x100000000);
            hash(hdr.s.out4, HashAlgorithm.csum16, 16w0, { hdr.s.val }, 32w65536);
            hash(hdr.s.out2, HashAlgorithm.identity, 32w5, { hdr.s.val }, 32w1000);
        } else if (hdr.s.op == 3) {
            hdr.s.out1 = hdr.s.val |+| 32w0xf0000000;
            hdr.s.out2 = hdr.s.val |-| 32w0x10;
            hdr.s.out5 = hdr.s.sval |+| 32s0x70000000;
        } else if (hdr.s.op == 4) {
            std.mcast_grp = (bit<16>)hdr.s.idx;
        } else if (hdr.s.op == 5) {
            hdr.marker.setValid();
            hdr.marker.m = 0xab;
            hdr.marker.pad = hdr.extra.x;
            hdr.extra.setInvalid();
        } else if (hdr.s.op == 6) {
            cond_act();
        } else if (hdr.s.op == 7) {
            hdr.s.out1 = 0x77;
            exit;
        } else if (hdr.s.op == 8) {
            hdr.s.out5 = hdr.s.sval >> 2;
            hdr.s.out1 = hdr.s.val << 3;
            hdr.s.out2 = hdr.s.val * 3;
            hdr.s.out3 = (bit<16>)(hdr.s.val >> 4) ^ 16w0x5a5a;
            hdr.s.out4 = ~(bit<16>)hdr.s.val;
            meta.tmp = hdr.s.val & 0xff00ff00 | 0x1;
            hdr.s.val = meta.tmp;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (hdr.s.isValid() && hdr.s.op == 4) {
            hdr.s.out3 = std.egress_rid;
            hdr.s.out4 = (bit<16>)std.egress_port;
            if (std.egress_port == 7) { mark_to_drop(std); }
        }
        if (hdr.s.isValid() && hdr.s.op == 7) { hdr.s.out2 = 0x88; }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.marker); pkt.emit(hdr.s); pkt.emit(hdr.extra); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
