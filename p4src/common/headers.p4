/* inart: packet headers shared by every INA program.  The INA header and payload follow
 * DESIGN.md section 3 (host_stack/wire.py is the Python side of the same format). */
#ifndef INART_HEADERS_P4
#define INART_HEADERS_P4

#include "constants.p4"
#include "repeat.p4"

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* `type` is a P4 keyword, so the wire field `type` is called pkt_type here. */
header ina_t {
    bit<8> pkt_type;
    bit<8> flags;
    bit<16> job;
    bit<32> round;
    bit<32> chunk;
    bit<16> slot;
    bit<16> count;
    bit<64> bitmap;
}

/* The N signed values as one header with fields v0..v{N-1}: one extract/emit per packet,
 * which is cheaper for software targets than a header stack of N one-field headers. */
#define INA_VALUE_FIELD(i) int<32> v##i;
header ina_values_t {
    INA_REPEAT(INA_VALUE_FIELD)
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    udp_t udp;
    ina_t ina;
    ina_values_t vals;
}

#endif
