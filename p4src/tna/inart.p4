/* inart: the INA switch program for Tofino (TNA, Tofino 1), built by the open-source bf-p4c.
 *
 * Same wire protocol, tables, actions and counters as p4src/v1model/inart.p4 (DESIGN.md
 * sections 3-4, names in p4src/README.md), rewritten for what a Tofino pipeline can do in
 * one pass: every register is read-modified-written ONCE per packet by its stage's stateful
 * ALU (SALU), a SALU has two comparisons and returns one 32-bit word, and a register lives in
 * one stage, so the slot state is a chain of registers over consecutive stages:
 *
 *   s0  ina_aggregate (job, PS, worker) and bitmap_rank (the packet's one bit -> its rank)
 *   s1  slot_round   round; older -> take it over (stale reclaim)          [check / claim]
 *   s2  slot_chunk   chunk; same round and chunk -> MATCH                  [check / claim]
 *   s3  slot_bitmap_lo, slot_bitmap_hi: the 64-bit contributor bitmap as two 32-bit words
 *   s4  duplicate test and union bitmap (plain ALUs)
 *   s5+ slot_count {count, sticky flags} and slot_sum_0 .. slot_sum_{N-1}, four per stage
 *
 * Freeing a completed slot needs the count (late in the chain) to clear state that the
 * round/chunk check (early) reads, which no single pass can do.  So a completed slot keeps
 * its (round, chunk) and only its count drops to 0; a packet of another chunk that finds the
 * slot's count at 0 is RESUBMITTED once with `claim` set, and in that second pass the
 * round/chunk registers take the new tag (see DESIGN.md 4: "empty slot: claim it").  Only the
 * first packet of each chunk on a reused slot takes the second pass.
 *
 * Saturation: the SALU adds with `|+|`, but it cannot also tell whether the add clipped, and
 * an OVERFLOW flag kept per slot would need a register after all the sums.  Instead a sum
 * that reaches an int32 limit stays there ("sticky saturation"), so an aggregate that
 * saturated on the way still has a value at a limit when it leaves, and egress sets OVERFLOW
 * on it.  Differences from v1model (documented in docs/tofino.md): an OVERFLOW aggregate's
 * values are the limits instead of the pulled-back sums, a sum that lands exactly on a limit
 * counts as saturated, and a late duplicate of a completed chunk is dropped as a duplicate
 * (v1model claims the freed slot with it).
 *
 * N (values per packet) is set below, before the common headers: see docs/tofino.md for why
 * this many fit in one pass, and p4src/build/tna/build-info.json, which records it. */
#ifndef INA_N
#define INA_N 12
#endif

#include <core.p4>
#include <tna.p4>

#include "../common/constants.p4"
#include "../common/headers.p4"

const int<32> INT32_MAX = 0x7fffffff;
const int<32> INT32_MIN = -0x7fffffff - 1;
const bit<32> MAX32 = 0x7fffffff;  /* the same limits as table keys (unsigned only there) */
const bit<32> MIN32 = 0x80000000;

/* What ingress decided to do with the packet. */
const bit<2> FATE_ROUTE = 0;
const bit<2> FATE_DROP = 1;
const bit<2> FATE_MULTICAST = 2;
const bit<2> FATE_RESUBMIT = 3;

/* Outcome of the round/chunk check. */
const bit<2> TAG_OTHER = 0;
const bit<2> TAG_MATCH = 1;
const bit<2> TAG_CLAIM = 2;

const bit<32> ROUND_NEWER = 0;
const bit<32> ROUND_SAME = 1;
const bit<32> ROUND_OLDER = 2;

/* What count_add returns when the contribution completes the slot. */
const bit<32> COUNT_COMPLETE = 1;

const bit<8> EV_NONE = 0xff;

/* The second pass of a packet that found its slot free (Tofino 1: 64 bits). */
header resubmit_h {
    bit<8> claim;
    bit<56> pad;
}

/* Ingress -> egress, in front of every packet. */
header bridge_h {
    bit<1> replica;     /* a RESULT to be replicated: egress rewrites it per egress_rid */
    bit<1> emitted;     /* this switch made the packet an aggregate (overflow_out counts it) */
    bit<1> summed;      /* ... with at least one add: egress checks its sums for saturation */
    bit<5> pad;
}

struct ig_meta_t {
    resubmit_h resub;
    bridge_h bridge;
    bit<2> fate;
    bit<8> ev;
    bit<8> ev2;
    bit<32> slot32;
    bit<32> idx;
    bit<16> room;
    bit<32> fan_in_m1;
    bit<16> fan_in;
    bit<8> rank;
    bit<32> agg_addr;
    bit<1> agg_hit;
    bit<1> bit_ok;
    bit<8> bit_rank;
    bit<32> round_rel;
    bit<2> tag;
    bit<32> old_lo;
    bit<32> old_hi;
    bit<32> dup_lo;
    bit<32> dup_hi;
    bit<8> flags_out;   /* an aggregate's flags but OVERFLOW: AGGREGATED, RETX cleared */
    bit<32> count_out;
}

struct eg_meta_t {
    bridge_h bridge;
    bit<1> saturated;
}

struct pair32_t {
    bit<32> lo;
    bit<32> hi;
}

/* ------------------------------------------------------------------------------------------
 * Ingress parser */

parser InaIngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        meta.resub.setInvalid();
        /* constants set here cost no pipeline stage (set in ingress they would delay every
         * table that writes the same fields) */
        meta.fate = FATE_ROUTE;
        meta.ev = EV_NONE;
        meta.ev2 = EV_NONE;
        meta.bit_ok = 0;
        meta.agg_hit = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }
    state parse_resubmit {
        pkt.extract(meta.resub);
        transition parse_ethernet;
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
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
        meta.slot32 = 16w0 ++ hdr.ina.slot;  /* the 32-bit operand of pool_base + slot */
        transition accept;
    }
}

/* ------------------------------------------------------------------------------------------
 * Ingress: routing, the slot state machine, RESULT multicast */

/* One register per value; claim stores the packet's value, add is a sticky saturating add. */
#define INA_SUM_REGISTER(i)                                                                  \
    Register<int<32>, bit<12>>(INA_SLOTS, 0) slot_sum_##i;                                   \
    RegisterAction<int<32>, bit<12>, int<32>>(slot_sum_##i) sum_store_##i = {                \
        void apply(inout int<32> value) { value = hdr.vals.v##i; }                           \
    };                                                                                       \
    RegisterAction<int<32>, bit<12>, int<32>>(slot_sum_##i) sum_add_##i = {                  \
        void apply(inout int<32> value, out int<32> rv) {                                    \
            if (value != INT32_MAX && value + INT32_MIN != 0) { /* != MIN, as the SALU   \
                                                                   * can hold -2^31 */       \
                value = value |+| hdr.vals.v##i;                                             \
            }                                                                                \
            rv = value;                                                                      \
        }                                                                                    \
    };
#define INA_SUM_STORE(i) sum_store_##i.execute(meta.idx[11:0]);
#define INA_SUM_ADD(i) hdr.vals.v##i = sum_add_##i.execute(meta.idx[11:0]);

control InaIngress(inout headers_t hdr, inout ig_meta_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* The packet's INA event (DESIGN.md 4) and, for the few packets with two, the second
     * one (stale_reclaimed beside absorbed_drop, no_route_drop after a forward decision):
     * Tofino counts a counter once per packet, so each gets its own; readers sum them. */
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) events;
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) more_events;

    /* ---- slot state ---- */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_round;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_round) round_check = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (value < hdr.ina.round) {
                value = hdr.ina.round;
                rv = ROUND_OLDER;
            } else if (value == hdr.ina.round) {
                rv = ROUND_SAME;
            } else {
                rv = ROUND_NEWER;
            }
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_round) round_claim = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (value == hdr.ina.round) {
                rv = ROUND_SAME;
            } else {
                value = hdr.ina.round;
                rv = ROUND_OLDER;
            }
        }
    };

    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_chunk;
    RegisterAction<bit<32>, bit<12>, bit<2>>(slot_chunk) chunk_check = {
        void apply(inout bit<32> value, out bit<2> rv) {
            if (value == hdr.ina.chunk) {
                rv = TAG_MATCH;
            } else {
                rv = TAG_OTHER;
            }
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<2>>(slot_chunk) chunk_claim = {
        void apply(inout bit<32> value, out bit<2> rv) {
            if (value == hdr.ina.chunk) {
                rv = TAG_MATCH;
            } else {
                value = hdr.ina.chunk;
                rv = TAG_CLAIM;
            }
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<2>>(slot_chunk) chunk_take = {
        void apply(inout bit<32> value) { value = hdr.ina.chunk; }
    };

    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_lo;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[31:0]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_or = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | hdr.ina.bitmap[31:0];
        }
    };
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_hi;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[63:32]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_or = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | hdr.ina.bitmap[63:32];
        }
    };

    /* Contributions so far; 0 = free.  A SALU reads at most two PHV fields, so the count
     * keeps nothing else (see the OVERFLOW note at the top). */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_count;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_count) count_claim = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = 1;
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_count) count_claim_single = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = 0;
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_count) count_add = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (value >= meta.fan_in_m1) {
                value = 0;
                rv = COUNT_COMPLETE;
            } else {
                value = value + 1;
                rv = 0;
            }
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_count) count_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    INA_REPEAT(INA_SUM_REGISTER)

    action drop_event(bit<8> ev) {
        meta.ev = ev;
        meta.fate = FATE_DROP;
    }

    /* ---- routing: (src, dst) exact first, then dst longest-prefix ---- */
    action set_next_hop(PortId_t port, bit<48> dst_mac, bit<48> src_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_no_route() {
        meta.ev2 = EV_NO_ROUTE_DROP;
        meta.fate = FATE_DROP;
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
        meta.idx = pool_base + meta.slot32;
        meta.room = pool_size |-| hdr.ina.slot;
        meta.fan_in = fan_in;
        meta.fan_in_m1 = (bit<32>)(fan_in - 1);
        meta.rank = rank;
        meta.agg_addr = agg_addr;
        meta.agg_hit = 1;
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

    /* The rank whose bit the packet's bitmap is (one bit set), for the spoofing check. */
    action bit_rank(bit<8> rank) {
        meta.bit_ok = 1;
        meta.bit_rank = rank;
    }
#define INA_RANK_ENTRY(r) 64w1 << r : bit_rank(r);
    table bitmap_rank {
        key = { hdr.ina.bitmap: exact; }
        actions = { bit_rank; @defaultonly NoAction; }
        const default_action = NoAction();
        const entries = {
            INA_RANK_ENTRY(0) INA_RANK_ENTRY(1) INA_RANK_ENTRY(2) INA_RANK_ENTRY(3)
            INA_RANK_ENTRY(4) INA_RANK_ENTRY(5) INA_RANK_ENTRY(6) INA_RANK_ENTRY(7)
            INA_RANK_ENTRY(8) INA_RANK_ENTRY(9) INA_RANK_ENTRY(10) INA_RANK_ENTRY(11)
            INA_RANK_ENTRY(12) INA_RANK_ENTRY(13) INA_RANK_ENTRY(14) INA_RANK_ENTRY(15)
            INA_RANK_ENTRY(16) INA_RANK_ENTRY(17) INA_RANK_ENTRY(18) INA_RANK_ENTRY(19)
            INA_RANK_ENTRY(20) INA_RANK_ENTRY(21) INA_RANK_ENTRY(22) INA_RANK_ENTRY(23)
            INA_RANK_ENTRY(24) INA_RANK_ENTRY(25) INA_RANK_ENTRY(26) INA_RANK_ENTRY(27)
            INA_RANK_ENTRY(28) INA_RANK_ENTRY(29) INA_RANK_ENTRY(30) INA_RANK_ENTRY(31)
            INA_RANK_ENTRY(32) INA_RANK_ENTRY(33) INA_RANK_ENTRY(34) INA_RANK_ENTRY(35)
            INA_RANK_ENTRY(36) INA_RANK_ENTRY(37) INA_RANK_ENTRY(38) INA_RANK_ENTRY(39)
            INA_RANK_ENTRY(40) INA_RANK_ENTRY(41) INA_RANK_ENTRY(42) INA_RANK_ENTRY(43)
            INA_RANK_ENTRY(44) INA_RANK_ENTRY(45) INA_RANK_ENTRY(46) INA_RANK_ENTRY(47)
            INA_RANK_ENTRY(48) INA_RANK_ENTRY(49) INA_RANK_ENTRY(50) INA_RANK_ENTRY(51)
            INA_RANK_ENTRY(52) INA_RANK_ENTRY(53) INA_RANK_ENTRY(54) INA_RANK_ENTRY(55)
            INA_RANK_ENTRY(56) INA_RANK_ENTRY(57) INA_RANK_ENTRY(58) INA_RANK_ENTRY(59)
            INA_RANK_ENTRY(60) INA_RANK_ENTRY(61) INA_RANK_ENTRY(62) INA_RANK_ENTRY(63)
        }
        size = 64;
    }

    /* Turn the packet into the ONE aggregate sent on to the PS. */
    action emit_aggregate() {
        hdr.ina.count = meta.fan_in;
        hdr.ina.flags = meta.flags_out;
        hdr.ipv4.src_addr = meta.agg_addr;
        meta.ev = EV_AGGREGATED_OUT;
        meta.bridge.emitted = 1;
    }

    /* ---- RESULT multicast: the PS's RESULT to the job's result address is replicated ---- */
    action multicast(MulticastGroupId_t group) {
        ig_tm_md.mcast_grp_a = group;
        meta.fate = FATE_MULTICAST;
        meta.ev = EV_RESULT_MULTICAST;
        meta.bridge.replica = 1;
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

    /* The slot state machine of one aggregatable GRAD (DESIGN.md 4). */
    action union_bitmap() {
        meta.dup_lo = meta.old_lo & hdr.ina.bitmap[31:0];
        meta.dup_hi = meta.old_hi & hdr.ina.bitmap[63:32];
        hdr.ina.bitmap = (meta.old_hi | hdr.ina.bitmap[63:32])
                         ++ (meta.old_lo | hdr.ina.bitmap[31:0]);
    }

    apply {
        /* the lookups first and unconditionally: every check below can then be a gateway
         * in the same stages as the slot registers */
        ina_aggregate.apply();
        bitmap_rank.apply();
        meta.bridge.setValid();
        meta.bridge.replica = 0;
        meta.bridge.emitted = 0;
        meta.bridge.summed = 0;
        meta.bridge.pad = 0;
        /* bits 2..0 are OVERFLOW, AGGREGATED, RETX (one deposit, not two ALU steps) */
        meta.flags_out = hdr.ina.flags[7:3] ++ INA_FLAG_AGGREGATED[2:0];
        if (!hdr.ipv4.isValid()) {
            drop_event(EV_NOT_IPV4_DROP);
        } else if (ig_prsr_md.parser_err != 0) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ina.isValid() && hdr.udp.length != INA_UDP_LENGTH) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ipv4.ttl <= 1) {
            drop_event(EV_TTL_EXPIRED_DROP);
        } else if (hdr.ina.isValid()) {
            hdr.udp.checksum = 0;
            if (hdr.ina.pkt_type == INA_TYPE_GRAD) {
                if (hdr.ina.flags[0:0] == INA_FLAG_RETX[0:0]
                        || hdr.ina.flags[2:2] == INA_FLAG_OVERFLOW[2:2]) {
                    /* RETX; or a GRAD already flagged OVERFLOW, which goes to the PS as is
                     * (the slot cannot keep the flag: see the top of this file) */
                    meta.ev = EV_RETX_BYPASS;
                } else if (meta.agg_hit == 1) {
                    if (meta.bit_ok == 0 || meta.bit_rank != meta.rank) {
                        drop_event(EV_SPOOFED_BITMAP_DROP);
                    } else if (meta.room == 0 || meta.idx[31:12] != 0) {
                        meta.ev = EV_SLOT_OUT_OF_POOL;
                    } else {
                        /* s1-s2: round and chunk */
                        if (meta.resub.isValid()) {
                            meta.round_rel = round_claim.execute(meta.idx[11:0]);
                        } else {
                            meta.round_rel = round_check.execute(meta.idx[11:0]);
                        }
                        if (meta.round_rel == ROUND_OLDER) {
                            chunk_take.execute(meta.idx[11:0]);
                            meta.tag = TAG_CLAIM;
                        } else if (meta.round_rel == ROUND_SAME) {
                            if (meta.resub.isValid()) {
                                meta.tag = chunk_claim.execute(meta.idx[11:0]);
                            } else {
                                meta.tag = chunk_check.execute(meta.idx[11:0]);
                            }
                        } else {
                            meta.tag = TAG_OTHER;
                        }
                        /* s3-s4: contributors */
                        if (meta.tag == TAG_CLAIM) {
                            bitmap_lo_set.execute(meta.idx[11:0]);
                            bitmap_hi_set.execute(meta.idx[11:0]);
                        } else if (meta.tag == TAG_MATCH) {
                            meta.old_lo = bitmap_lo_or.execute(meta.idx[11:0]);
                            meta.old_hi = bitmap_hi_or.execute(meta.idx[11:0]);
                            union_bitmap();
                        }
                        /* s5+: count and sums */
                        if (meta.tag == TAG_CLAIM) {
                            if (meta.fan_in <= 1) {
                                meta.count_out = count_claim_single.execute(meta.idx[11:0]);
                                emit_aggregate();
                            } else {
                                meta.count_out = count_claim.execute(meta.idx[11:0]);
                                INA_REPEAT(INA_SUM_STORE)
                                drop_event(EV_ABSORBED_DROP);
                            }
                            if (meta.count_out != 0) {
                                meta.ev2 = EV_STALE_RECLAIMED;
                            }
                        } else if (meta.tag == TAG_MATCH) {
                            /* one word per condition: a gateway reads 4 bytes at most */
                            if (meta.dup_lo != 0) {
                                drop_event(EV_DUPLICATE_DROP);
                            } else if (meta.dup_hi != 0) {
                                drop_event(EV_DUPLICATE_DROP);
                            } else {
                                meta.count_out = count_add.execute(meta.idx[11:0]);
                                INA_REPEAT(INA_SUM_ADD)
                                if (meta.count_out == COUNT_COMPLETE) {
                                    emit_aggregate();
                                    meta.bridge.summed = 1;
                                } else {
                                    drop_event(EV_ABSORBED_DROP);
                                }
                            }
                        } else if (count_read.execute(meta.idx[11:0]) == 0) {
                            /* the slot was freed: take it over in a second pass */
                            meta.fate = FATE_RESUBMIT;
                        } else {
                            meta.ev = EV_COLLISION;
                        }
                    }
                }
            } else if (hdr.ina.pkt_type == INA_TYPE_RESULT) {
                result_multicast.apply();
            }
        }
        if (meta.fate == FATE_ROUTE || meta.fate == FATE_MULTICAST) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
        if (meta.fate == FATE_ROUTE) {
            if (!route_pair.apply().hit) {
                route_dst.apply();
            }
        }
        if (meta.fate == FATE_DROP) {
            ig_dprsr_md.drop_ctl = 1;
        } else if (meta.fate == FATE_RESUBMIT) {
            ig_dprsr_md.resubmit_type = 1;
            meta.resub.setValid();
            meta.resub.claim = 1;
            meta.resub.pad = 0;
        }
        if (meta.ev != EV_NONE) {
            events.count(meta.ev);
        }
        if (meta.ev2 != EV_NONE) {
            more_events.count(meta.ev2);
        }
    }
}

control InaIngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(meta.resub);
        }
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------------------------
 * Egress: per-replica RESULT rewrite, OVERFLOW of saturated aggregates, IPv4 checksum */

parser InaEgressParser(packet_in pkt, out headers_t hdr, out eg_meta_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(meta.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
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

/* Saturation of an aggregate: one ternary table per four values, each entry one value at a
 * limit.  (One `if` per value would write the same flag from N tables, which Tofino can only
 * do one stage apart; a gateway reads 4 bytes, a table this many.) */
#if INA_N % 4 != 0 || INA_N > 16
#error "the saturation tables below cover INA_N = 4, 8, 12 or 16 (four values each)"
#endif
#define INA_SAT_TABLE(g, a, b, c, d)                                                          \
    table saturated_##g {                                                                    \
        key = { (bit<32>)hdr.vals.v##a: ternary @name(#a);                               \
                (bit<32>)hdr.vals.v##b: ternary @name(#b);                               \
                (bit<32>)hdr.vals.v##c: ternary @name(#c);                               \
                (bit<32>)hdr.vals.v##d: ternary @name(#d); }                             \
        actions = { saturated; @defaultonly NoAction; }                                      \
        const default_action = NoAction();                                                   \
        const entries = {                                                                    \
            (MAX32, _, _, _): saturated(); (MIN32, _, _, _): saturated();                    \
            (_, MAX32, _, _): saturated(); (_, MIN32, _, _): saturated();                    \
            (_, _, MAX32, _): saturated(); (_, _, MIN32, _): saturated();                    \
            (_, _, _, MAX32): saturated(); (_, _, _, MIN32): saturated();                    \
        }                                                                                    \
        size = 8;                                                                            \
    }

control InaEgress(inout headers_t hdr, inout eg_meta_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    /* RESULT replicas whose egress_rid has no result_rewrite entry (a controller error). */
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS_AND_BYTES) replica_drops;
    /* overflow_out (same index map as InaIngress.events): only egress sees saturation. */
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) events;

    /* Each PRE replica (egress_rid) becomes a unicast RESULT to one worker. */
    action rewrite_result(bit<32> dst_addr, bit<48> dst_mac, bit<48> src_mac) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_unknown_replica() {
        replica_drops.count(0);
        eg_dprsr_md.drop_ctl = 1;
    }
    table result_rewrite {
        key = { eg_intr_md.egress_rid: exact @name("egress_rid"); }
        actions = { rewrite_result; @defaultonly drop_unknown_replica; }
        const default_action = drop_unknown_replica();
        size = 16384;
    }
    action saturated() {
        meta.saturated = 1;
    }
    INA_SAT_TABLE(0, 0, 1, 2, 3)
#if INA_N > 4
    INA_SAT_TABLE(1, 4, 5, 6, 7)
#endif
#if INA_N > 8
    INA_SAT_TABLE(2, 8, 9, 10, 11)
#endif
#if INA_N > 12
    INA_SAT_TABLE(3, 12, 13, 14, 15)
#endif
    apply {
        meta.saturated = 0;
        if (meta.bridge.replica == 1) {
            result_rewrite.apply();
        } else if (meta.bridge.summed == 1) {
            saturated_0.apply();
#if INA_N > 4
            saturated_1.apply();
#endif
#if INA_N > 8
            saturated_2.apply();
#endif
#if INA_N > 12
            saturated_3.apply();
#endif
            if (meta.saturated == 1) {
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
            }
        }
        if (meta.bridge.emitted == 1 && (hdr.ina.flags & INA_FLAG_OVERFLOW) != 0) {
            events.count(EV_OVERFLOW_OUT);
        }
    }
}

control InaEgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(InaIngressParser(), InaIngress(), InaIngressDeparser(),
         InaEgressParser(), InaEgress(), InaEgressDeparser()) pipe;

Switch(pipe) main;
