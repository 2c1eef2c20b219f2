// INA-style aggregation (DESIGN.md section 4, simplified) with N = 32 int<32> values per
// packet: the embedded target's benchmark and register-heavy test program until the real
// program of p4src/ lands.  Eth / IPv4 / UDP 47000 / INA header / N values.
#include <core.p4>
#include <v1model.p4>

#define N_VALUES 32

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> identification;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> checksum; }
header ina_t {
    bit<8> type; bit<8> flags; bit<16> job; bit<32> round; bit<32> chunk; bit<16> slot;
    bit<16> count; bit<64> bitmap;
}
header values_t {
    int<32> v0;
    int<32> v1;
    int<32> v2;
    int<32> v3;
    int<32> v4;
    int<32> v5;
    int<32> v6;
    int<32> v7;
    int<32> v8;
    int<32> v9;
    int<32> v10;
    int<32> v11;
    int<32> v12;
    int<32> v13;
    int<32> v14;
    int<32> v15;
    int<32> v16;
    int<32> v17;
    int<32> v18;
    int<32> v19;
    int<32> v20;
    int<32> v21;
    int<32> v22;
    int<32> v23;
    int<32> v24;
    int<32> v25;
    int<32> v26;
    int<32> v27;
    int<32> v28;
    int<32> v29;
    int<32> v30;
    int<32> v31;
}
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; udp_t udp; ina_t ina; values_t p; }
struct meta_t {
    bit<32> slot; bit<32> base; bit<32> old; bit<32> round; bit<32> chunk; bit<64> bitmap;
    bit<16> count; bit<16> fan_in; bit<1> fresh; bit<9> out_port;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 17: parse_udp; default: accept; }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dport) { 47000: parse_ina; default: accept; }
    }
    state parse_ina { pkt.extract(hdr.ina); pkt.extract(hdr.p); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

#define AGG(i) values.read(meta.old, meta.base + i); \
    hdr.p.v##i = (meta.fresh == 1) ? hdr.p.v##i : ((int<32>)meta.old |+| hdr.p.v##i); \
    values.write(meta.base + i, (bit<32>)hdr.p.v##i);

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<32>>(1024) slot_round;
    register<bit<32>>(1024) slot_chunk;
    register<bit<64>>(1024) slot_bitmap;
    register<bit<16>>(1024) slot_count;
    register<bit<32>>(1024 * N_VALUES) values;
    counter(4, CounterType.packets) events;  // 0 absorbed, 1 emitted, 2 collision, 3 routed

    action drop() { mark_to_drop(std); }
    action route_to(bit<9> port) { std.egress_spec = port; }
    action aggregate(bit<32> pool_base, bit<16> fan_in, bit<9> ps_port) {
        meta.slot = pool_base + (bit<32>)hdr.ina.slot;
        meta.fan_in = fan_in;
        meta.out_port = ps_port;
    }
    table route {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { route_to; drop; }
        default_action = drop();
    }
    table agg {
        key = { hdr.ina.job: exact; hdr.ipv4.dst_addr: exact; }
        actions = { aggregate; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.ina.isValid() && hdr.ina.type == 1 && agg.apply().hit) {
            meta.base = meta.slot * N_VALUES;
            slot_round.read(meta.round, meta.slot);
            slot_chunk.read(meta.chunk, meta.slot);
            slot_bitmap.read(meta.bitmap, meta.slot);
            slot_count.read(meta.count, meta.slot);
            if (meta.count == 0 || meta.round < hdr.ina.round) {
                meta.fresh = 1;
                meta.count = 0;
                meta.bitmap = 0;
            } else {
                meta.fresh = 0;
            }
            if (meta.fresh == 0 && (meta.chunk != hdr.ina.chunk || meta.round != hdr.ina.round)) {
                events.count(2);
                route.apply();
            } else {
            AGG(0)
            AGG(1)
            AGG(2)
            AGG(3)
            AGG(4)
            AGG(5)
            AGG(6)
            AGG(7)
            AGG(8)
            AGG(9)
            AGG(10)
            AGG(11)
            AGG(12)
            AGG(13)
            AGG(14)
            AGG(15)
            AGG(16)
            AGG(17)
            AGG(18)
            AGG(19)
            AGG(20)
            AGG(21)
            AGG(22)
            AGG(23)
            AGG(24)
            AGG(25)
            AGG(26)
            AGG(27)
            AGG(28)
            AGG(29)
            AGG(30)
            AGG(31)
                meta.count = meta.count + 1;
                meta.bitmap = meta.bitmap | hdr.ina.bitmap;
                if (meta.count == meta.fan_in) {
                    hdr.ina.count = meta.count;
                    hdr.ina.bitmap = meta.bitmap;
                    hdr.ina.flags = hdr.ina.flags | 2;
                    std.egress_spec = meta.out_port;
                    slot_count.write(meta.slot, 0);
                    events.count(1);
                } else {
                    slot_round.write(meta.slot, hdr.ina.round);
                    slot_chunk.write(meta.slot, hdr.ina.chunk);
                    slot_bitmap.write(meta.slot, meta.bitmap);
                    slot_count.write(meta.slot, meta.count);
                    events.count(0);
                    mark_to_drop(std);
                }
            }
        } else if (hdr.ipv4.isValid()) {
            events.count(3);
            route.apply();
        } else {
            mark_to_drop(std);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); pkt.emit(hdr.udp); pkt.emit(hdr.ina);
        pkt.emit(hdr.p);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
