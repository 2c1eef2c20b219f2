// TCP and UDP checksums over the payload (verify/update_checksum_with_payload): a frame whose
// IPv4, TCP or UDP checksum is wrong is dropped; the table rewrites the destination address
// and port, and the checksums are computed afresh over pseudo-header, header and payload
// (TCP options are left unparsed, so they count as payload).
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header tcp_t {
    bit<16> srcPort; bit<16> dstPort; bit<32> seqNo; bit<32> ackNo; bit<4> dataOffset;
    bit<4> res; bit<8> flags; bit<16> window; bit<16> checksum; bit<16> urgentPtr;
}
header udp_t { bit<16> srcPort; bit<16> dstPort; bit<16> length; bit<16> checksum; }
struct headers_t { eth_t eth; ipv4_t ipv4; tcp_t tcp; udp_t udp; }
struct meta_t { bit<16> l4Len; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        meta.l4Len = hdr.ipv4.totalLen - 20;
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, 6): tcp;
            (5, 17): udp;
            default: accept;
        }
    }
    state tcp { pkt.extract(hdr.tcp); transition accept; }
    state udp { pkt.extract(hdr.udp); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
        verify_checksum_with_payload(hdr.tcp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, meta.l4Len,
              hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.tcp.seqNo, hdr.tcp.ackNo,
              hdr.tcp.dataOffset, hdr.tcp.res, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgentPtr },
            hdr.tcp.checksum, HashAlgorithm.csum16);
        verify_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, meta.l4Len,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action rewrite(bit<32> addr, bit<16> port) {
        hdr.ipv4.dstAddr = addr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.tcp.dstPort = port;  // of the two, only the valid header is emitted
        hdr.udp.dstPort = port;
    }
    action bump() {  // what p4c's checksum-l4-bmv2 sample does to its frames
        hdr.tcp.srcPort = hdr.tcp.srcPort + 1;
        hdr.udp.srcPort = hdr.udp.srcPort + 1;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.ipv4.dstAddr = hdr.ipv4.dstAddr + 4;
    }
    table nat {
        key = { hdr.ipv4.dstAddr: exact; }
        actions = { rewrite; bump; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (std.checksum_error == 1) {
            mark_to_drop(std);
            return;
        }
        std.egress_spec = 2;
        if (hdr.ipv4.isValid()) {
            nat.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.tcp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, meta.l4Len,
              hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.tcp.seqNo, hdr.tcp.ackNo,
              hdr.tcp.dataOffset, hdr.tcp.res, hdr.tcp.flags, hdr.tcp.window,
              hdr.tcp.urgentPtr },
            hdr.tcp.checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, meta.l4Len,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
