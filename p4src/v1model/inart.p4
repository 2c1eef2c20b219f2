/* inart: the INA switch program for v1model (bmv2 simple_switch_grpc and the embedded target).
 *
 * Implements DESIGN.md section 4.  Every table, action and counter below is filled or read by
 * the controller over P4Runtime under the names listed in p4src/README.md; keep them stable.
 *
 * Slot state lives in one register array per field: a 64-bit (round, chunk) tag, a 64-bit
 * contributor bitmap, a 16-bit count (0 = empty), 8 bits of sticky flags (OVERFLOW), and one
 * 32-bit array per value (slot_sum_0 .. slot_sum_{N-1}).  One array per value rather than
 * one wide register: bmv2 keeps narrow registers as machine words, p4c emits plain
 * register_read/register_write primitives, and the same layout maps onto Tofino stages. */
#include <core.p4>
#include <v1model.p4>

#include "../common/constants.p4"
#include "../common/headers.p4"

/* What ingress decided to do with the packet. */
const bit<2> FATE_ROUTE = 0;
const bit<2> FATE_DROP = 1;
const bit<2> FATE_MULTICAST = 2;

struct ina_meta_t {
    bit<32> pool_base;
    bit<16> pool_size;
    bit<16> fan_in;
    bit<8> rank;
    bit<32> agg_addr;
    bit<32> idx;
    bit<64> s_tag;
    bit<64> s_bitmap;
    bit<16> s_count;
    bit<8> s_flags;
    bit<1> ovf;
}

struct metadata_t {
    bit<2> fate;
    ina_meta_t ina;
}

parser InartParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* Only option-less, unfragmented (or first-fragment) UDP reaches the INA parser. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_GRAD_PORT: parse_ina;
            INA_RESULT_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        pkt.extract(hdr.vals);
        transition accept;
    }
}

control InartVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

#define INA_SUM_REGISTER(i) register<bit<32>>(INA_SLOTS) slot_sum_##i;
#define INA_SUM_STORE(i) slot_sum_##i.write(meta.ina.idx, (bit<32>)hdr.vals.v##i);
/* Saturating add of the stored sum into the packet's value; the sum saturated iff it
 * differs from the wrap-around sum, which sets the slot's OVERFLOW flag. */
#define INA_SUM_ADD(i)                                                       \
    slot_sum_##i.read(stored, meta.ina.idx);                                 \
    sat = (int<32>)stored |+| hdr.vals.v##i;                                 \
    meta.ina.ovf = meta.ina.ovf | (bit<1>)(sat != (int<32>)stored + hdr.vals.v##i); \
    hdr.vals.v##i = sat;

control InaIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(EV_COUNT, CounterType.packets_and_bytes) events;

    register<bit<64>>(INA_SLOTS) slot_tag;
    register<bit<64>>(INA_SLOTS) slot_bitmap;
    register<bit<16>>(INA_SLOTS) slot_count;
    register<bit<8>>(INA_SLOTS) slot_flags;
    INA_REPEAT(INA_SUM_REGISTER)

    action drop_event(bit<32> ev) {
        events.count(ev);
        mark_to_drop(sm);
        meta.fate = FATE_DROP;
    }

    /* ---- routing: (src, dst) exact first, then dst longest-prefix ---- */
    action set_next_hop(bit<9> port, bit<48> dst_mac, bit<48> src_mac) {
        sm.egress_spec = port;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_no_route() {
        drop_event(EV_NO_ROUTE_DROP);
    }
    table route_pair {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.ipv4.dst_addr: exact @name("dst_addr");
        }
        actions = { set_next_hop; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 16384;
    }
    table route_dst {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_next_hop; @defaultonly drop_no_route; }
        const default_action = drop_no_route();
        size = 4096;
    }

    /* ---- aggregation: one entry per (job, PS, worker) this switch aggregates ---- */
    action aggregate(bit<32> pool_base, bit<16> pool_size, bit<16> fan_in, bit<8> rank,
                     bit<32> agg_addr) {
        meta.ina.pool_base = pool_base;
        meta.ina.pool_size = pool_size;
        meta.ina.fan_in = fan_in;
        meta.ina.rank = rank;
        meta.ina.agg_addr = agg_addr;
        meta.ina.idx = pool_base + (bit<32>)hdr.ina.slot;
    }
    table ina_aggregate {
        key = {
            hdr.ina.job: exact @name("job");
            hdr.ipv4.dst_addr: exact @name("ps_addr");
            hdr.ipv4.src_addr: exact @name("worker_addr");
        }
        actions = { aggregate; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 16384;
    }

    action read_slot() {
        slot_tag.read(meta.ina.s_tag, meta.ina.idx);
        slot_bitmap.read(meta.ina.s_bitmap, meta.ina.idx);
        slot_count.read(meta.ina.s_count, meta.ina.idx);
        slot_flags.read(meta.ina.s_flags, meta.ina.idx);
    }
    /* First contribution of a chunk: the slot holds exactly this packet. */
    action claim_slot() {
        slot_tag.write(meta.ina.idx, hdr.ina.round ++ hdr.ina.chunk);
        slot_bitmap.write(meta.ina.idx, hdr.ina.bitmap);
        slot_count.write(meta.ina.idx, 1);
        slot_flags.write(meta.ina.idx, hdr.ina.flags & INA_FLAG_OVERFLOW);
        INA_REPEAT(INA_SUM_STORE)
    }
    /* A fan-in-1 packet completes its slot at once: the aggregate is the packet itself. */
    action take_single() {
        meta.ina.s_bitmap = hdr.ina.bitmap;
        meta.ina.s_count = 1;
        meta.ina.s_flags = hdr.ina.flags & INA_FLAG_OVERFLOW;
    }
    /* Add the slot's sums into the packet (which then carries the running aggregate). */
    action add_to_packet() {
        bit<32> stored;
        int<32> sat;
        meta.ina.ovf = 0;
        INA_REPEAT(INA_SUM_ADD)
        meta.ina.s_bitmap = meta.ina.s_bitmap | hdr.ina.bitmap;
        meta.ina.s_count = meta.ina.s_count + 1;
        meta.ina.s_flags = meta.ina.s_flags | (hdr.ina.flags & INA_FLAG_OVERFLOW)
                           | ((bit<8>)meta.ina.ovf << 2);
    }
    /* Not complete yet: keep the running aggregate in the slot. */
    action store_slot() {
        slot_bitmap.write(meta.ina.idx, meta.ina.s_bitmap);
        slot_count.write(meta.ina.idx, meta.ina.s_count);
        slot_flags.write(meta.ina.idx, meta.ina.s_flags);
        INA_REPEAT(INA_SUM_STORE)
    }
    action free_slot() {
        slot_count.write(meta.ina.idx, 0);
        slot_bitmap.write(meta.ina.idx, 0);
        slot_flags.write(meta.ina.idx, 0);
    }
    /* Turn the packet into the ONE aggregate sent on to the PS. */
    action emit_aggregate() {
        hdr.ina.bitmap = meta.ina.s_bitmap;
        hdr.ina.count = meta.ina.s_count;
        hdr.ina.flags = (hdr.ina.flags & ~(INA_FLAG_RETX | INA_FLAG_OVERFLOW))
                        | INA_FLAG_AGGREGATED | meta.ina.s_flags;
        hdr.ipv4.src_addr = meta.ina.agg_addr;
        events.count(EV_AGGREGATED_OUT);
    }
    action count_overflow() {
        events.count(EV_OVERFLOW_OUT);
    }

    /* ---- RESULT multicast: the PS's RESULT to the job's result address is replicated ---- */
    action multicast(bit<16> group) {
        sm.mcast_grp = group;
        meta.fate = FATE_MULTICAST;
        events.count(EV_RESULT_MULTICAST);
    }
    table result_multicast {
        key = {
            hdr.ina.job: exact @name("job");
            hdr.ipv4.src_addr: exact @name("ps_addr");
            hdr.ipv4.dst_addr: exact @name("dst_addr");
        }
        actions = { multicast; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4096;
    }

    apply {
        meta.fate = FATE_ROUTE;
        if (!hdr.ipv4.isValid()) {
            drop_event(EV_NOT_IPV4_DROP);
        } else if (sm.parser_error != error.NoError) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ina.isValid() && hdr.udp.length != INA_UDP_LENGTH) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ipv4.ttl <= 1) {
            drop_event(EV_TTL_EXPIRED_DROP);
        } else if (hdr.ina.isValid()) {
            /* Every INA packet the switch emits carries UDP checksum 0 (legal for IPv4). */
            hdr.udp.checksum = 0;
            if (hdr.ina.pkt_type == INA_TYPE_GRAD) {
                if ((hdr.ina.flags & INA_FLAG_RETX) != 0) {
                    events.count(EV_RETX_BYPASS);
                } else if (ina_aggregate.apply().hit) {
                    if (hdr.ina.bitmap != (64w1 << meta.ina.rank)) {
                        drop_event(EV_SPOOFED_BITMAP_DROP);
                    } else if (hdr.ina.slot >= meta.ina.pool_size || meta.ina.idx >= INA_SLOTS) {
                        events.count(EV_SLOT_OUT_OF_POOL);
                    } else {
                        read_slot();
                        if (meta.ina.s_count == 0 || meta.ina.s_tag[63:32] < hdr.ina.round) {
                            if (meta.ina.s_count != 0) {
                                events.count(EV_STALE_RECLAIMED);
                            }
                            if (meta.ina.fan_in <= 1) {
                                take_single();
                                free_slot();
                                emit_aggregate();
                                if ((meta.ina.s_flags & INA_FLAG_OVERFLOW) != 0) {
                                    count_overflow();
                                }
                            } else {
                                claim_slot();
                                drop_event(EV_ABSORBED_DROP);
                            }
                        } else if (meta.ina.s_tag == (hdr.ina.round ++ hdr.ina.chunk)) {
                            if ((meta.ina.s_bitmap & hdr.ina.bitmap) != 0) {
                                drop_event(EV_DUPLICATE_DROP);
                            } else {
                                add_to_packet();
                                if (meta.ina.s_count >= meta.ina.fan_in) {
                                    free_slot();
                                    emit_aggregate();
                                    if ((meta.ina.s_flags & INA_FLAG_OVERFLOW) != 0) {
                                        count_overflow();
                                    }
                                } else {
                                    store_slot();
                                    drop_event(EV_ABSORBED_DROP);
                                }
                            }
                        } else {
                            events.count(EV_COLLISION);
                        }
                    }
                }
            } else if (hdr.ina.pkt_type == INA_TYPE_RESULT) {
                result_multicast.apply();
            }
        }
        if (meta.fate != FATE_DROP) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            if (meta.fate == FATE_ROUTE) {
                if (!route_pair.apply().hit) {
                    route_dst.apply();
                }
            }
        }
    }
}

control InaEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    /* RESULT replicas whose egress_rid has no result_rewrite entry (a controller error). */
    counter(1, CounterType.packets_and_bytes) replica_drops;

    /* Each PRE replica (egress_rid) becomes a unicast RESULT to one worker. */
    action rewrite_result(bit<32> dst_addr, bit<48> dst_mac, bit<48> src_mac) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_unknown_replica() {
        replica_drops.count(0);
        mark_to_drop(sm);
    }
    table result_rewrite {
        key = { sm.egress_rid: exact @name("egress_rid"); }
        actions = { rewrite_result; @defaultonly drop_unknown_replica; }
        const default_action = drop_unknown_replica();
        size = 16384;
    }
    apply {
        if (sm.instance_type == 5) {  /* v1model PKT_INSTANCE_TYPE_REPLICATION */
            result_rewrite.apply();
        }
    }
}

control InartComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control InartDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.vals);
    }
}

V1Switch(InartParser(), InartVerifyChecksum(), InaIngress(), InaEgress(), InartComputeChecksum(),
         InartDeparser()) main;
