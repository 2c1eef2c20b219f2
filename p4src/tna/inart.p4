/* inart: the INA switch program for Tofino 1 (TNA) with 64 values per packet.
 *
 * Same wire protocol, controller-facing tables, actions and counters as p4src/v1model/inart.p4
 * (DESIGN.md sections 3-4, names in p4src/README.md).  The layout follows Tofino 1's stateful
 * ALUs (SALUs): a register lives in one stage, is read-modified-written once per pass by its
 * SALU, and one SALU has two PHV inputs, two comparisons, four instructions (RegisterActions)
 * and ONE 32-bit output.  docs/tofino.md ("The TNA program") has the design and budget.
 *
 * Values: a pair register per two values (slot_sum_k holds the sums of v_k and v_{k+32}), so
 * 32 SALUs add all 64 values in one pass.  A SALU outputs one word, so the packet that
 * completes a slot gets the sums of v0..v31 in its first pass and takes a SECOND pass (the
 * "harvest", through its pipe's recirculation port) that reads v32..v63, the union bitmap and
 * the overflow guard, frees the slot and sends the aggregate on.  Every other packet takes one
 * pass, except the first packet of a chunk on a slot, which is resubmitted once to claim it
 * (slot_tag's two comparisons cannot tell MATCH, free-or-older and newer apart in one
 * access), and a packet whose claim lost to another one, which goes round the recirculation
 * port once to try again as a MATCH (two first packets of one chunk).
 *
 * Stage map (ingress), as the open-source back end places it, in 12 stages: s0 ina_aggregate,
 * bitmap_rank, guard_lo_a; s1 the checks, slot_tag, fan_in_class; s2 slot_bitmap_lo/_hi,
 * result_multicast, guard_hi_a; s3 slot_count, guard_lo_b, 3 sum registers; s4 the count's
 * answer, guard_hi_b, 4 sum registers; s5 slot_guard, 3 sum registers, route_pair and the
 * fate's actions; s6 route_dst, the event counters, 4 sum registers; s7-s10 4 sum registers
 * each; s11 2.  The apply block is written in that order, one block per stage of the slot
 * logic with a guard table between the blocks: on Tofino 1 a table cannot run inside another
 * block's stage span, and each guard table needs a stage's ternary input crossbar.
 * docs/tofino.md, "How the program was fitted", has every trial compile and what it taught.
 *
 * Overflow: a pair SALU has one comparison per value, too few for a saturation that also
 * reports that it clipped (as a one-value-per-SALU layout can), so overflow is detected from
 * the inputs: a
 * slot whose fan-in is at most 2^c can only overflow if some contribution has a value outside
 * [-2^(31-c), 2^(31-c)); the guard tables test that on every packet (as a thermometer code
 * of how far the worst value is out of range, one byte per table), the slot ORs the codes
 * (slot_guard), and the harvest hands them with the slot's class mask to egress, which sets
 * OVERFLOW on the aggregate when a code reaches the class.  The sums still saturate (|+|).
 * So OVERFLOW is never missed; it can be set on an aggregate that did not overflow (a value
 * outside the guard range that the others offset), which costs the host one resend of the
 * chunk.
 */
#ifndef INA_N
#define INA_N 64
#endif
#if INA_N != 64
#error "this program pairs value k with value k + 32 (slot_sum_k): INA_N must be 64"
#endif

#include <core.p4>
#include <tna.p4>

#include "../common/constants.p4"
#include "../common/headers.p4"

/* What ingress decided to do with the packet. */
const bit<3> FATE_ROUTE = 0;
const bit<3> FATE_DROP = 1;
const bit<3> FATE_MULTICAST = 2;
const bit<3> FATE_RESUBMIT = 3;     /* first packet of a chunk: claim the slot in a second pass */
const bit<3> FATE_HARVEST = 4;      /* completed the slot: read the rest in a second pass */
const bit<3> FATE_RETRY = 5;        /* lost a claim: once more from the start */

/* SALU predicate outputs (this.predicate(cmplo, cmphi)): one bit per outcome, 0b0001 when
 * neither comparison holds. */
const bit<4> PRED_LO = 0b0010;      /* only the first */
const bit<4> PRED_HI = 0b0100;      /* only the second */
const bit<4> PRED_BOTH = 0b1000;
const bit<4> PRED_NONE = 0b0001;    /* neither */

/* Tofino 1's recirculation port is pipe-local port 68 (dev ports 68, 196, 324, 452). */
const bit<7> RECIRC_PORT_LOCAL = 68;

const bit<8> EV_NONE = 0xff;

/* What the packet does to the slot's sums (meta.sum_op, the key of every sum table). */
const bit<2> SUM_NONE = 0;
const bit<2> SUM_STORE = 1;         /* claim */
const bit<2> SUM_ADD = 2;           /* a contribution, unless the bitmap finds a duplicate */
const bit<2> SUM_READ = 3;          /* harvest */

/* The claim pass of a resubmitted packet (Tofino 1: 64 bits). */
header resubmit_h {
    bit<8> claim;
    bit<56> pad;
}

/* In front of a packet sent round its pipe's recirculation port (egress bypassed): a
 * completing packet for its harvest (with the slot to read), or a packet whose claim lost. */
const bit<8> RECIRC_HARVEST = 1;
const bit<8> RECIRC_RETRY = 2;
header recirc_h {
    bit<8> kind;
    bit<32> idx;        /* all of meta.idx: a slice of it would pin both to one PHV container */
    bit<32> guard_mask; /* the slot's guard class, for the harvest (see fan_in_class) */
}

/* Ingress -> egress, in front of every packet that goes through egress. */
header bridge_h {
    bit<1> replica;     /* a RESULT to be replicated: egress rewrites it per egress_rid */
    bit<1> emitted;     /* this switch made the packet an aggregate (overflow_out counts it) */
    bit<6> pad;
    bit<32> guard;      /* the harvest's guard codes and class mask, for egress: */
    bit<32> guard_mask; /* OVERFLOW when guard & guard_mask != 0 */
}

struct ig_meta_t {
    resubmit_h resub;
    recirc_h recirc;
    bridge_h bridge;
    bit<3> fate;
    bit<1> routed;        /* route_pair hit */
    bit<8> pass_kind;     /* the arriving recirculation header's kind, 0 if none */
    bit<2> sum_op;
    PortId_t recirc_port; /* this pipe's recirculation port */
    bit<8> ev;
    bit<8> ev2;
    bit<32> slot32;
    bit<32> idx;
    bit<16> room;
    bit<16> fan_in;
    bit<32> fan_in32;     /* the same, as the count SALU's operand */
    bit<8> rank;
    bit<32> agg_addr;
    bit<1> agg_hit;
    bit<1> bit_ok;
    bit<8> bit_rank;
    /* the overflow guard: thermometer codes (bits d-1 .. 5 set: some value's bit 31-d
     * differs from its sign bit, for the smallest such d), per 16 values, then all 64 */
    bit<32> guard;        /* one code per byte, from the four guard tables */
    bit<32> guard_mask;   /* bit c-1 of every byte for the slot's fan-in class c */
    /* the tag register's answer, one field per access (0: not asked; answers are one-hot):
     * the next stage's block tells them apart without a mode written beside them */
    bit<4> tag;           /* check */
    bit<4> tag_claimed;   /* claim pass */
    bit<4> tag_freed;     /* harvest */
    bit<32> dup_lo;
    bit<32> dup_hi;
    bit<4> count_pred;
    bit<4> count_old;     /* PRED_LO: the claim replaced a slot with contributions pending */
}

struct eg_meta_t {
    bridge_h bridge;
}

struct pair32_t {
    bit<32> lo;
    bit<32> hi;
}

struct sum_pair_t {
    int<32> lo;
    int<32> hi;
}

/* M(k, k + 32) for the 32 pairs of values, in two halves of 16. */
#define INA_PAIRS_A(M)                                                                       \
    M(0, 32) M(1, 33) M(2, 34) M(3, 35) M(4, 36) M(5, 37) M(6, 38) M(7, 39)                  \
    M(8, 40) M(9, 41) M(10, 42) M(11, 43) M(12, 44) M(13, 45) M(14, 46) M(15, 47)
#define INA_PAIRS_B(M)                                                                       \
    M(16, 48) M(17, 49) M(18, 50) M(19, 51) M(20, 52) M(21, 53) M(22, 54) M(23, 55)          \
    M(24, 56) M(25, 57) M(26, 58) M(27, 59) M(28, 60) M(29, 61) M(30, 62) M(31, 63)
#define INA_PAIRS(M) INA_PAIRS_A(M) INA_PAIRS_B(M)

/* ------------------------------------------------------------------------------------------
 * Ingress parser */

parser InaIngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        meta.recirc_port = ig_intr_md.ingress_port;  /* the pipe's bits; the port's below */
        meta.resub.setInvalid();
        meta.recirc.setInvalid();
        /* constants set here cost no pipeline stage */
        meta.pass_kind = 0;
        meta.sum_op = SUM_NONE;
        meta.dup_lo = 0;
        meta.dup_hi = 0;
        meta.tag = 0;
        meta.tag_claimed = 0;
        meta.tag_freed = 0;
        meta.count_pred = 0;  /* 0: the count was not asked (its answers are one-hot) */
        meta.count_old = 0;
        meta.fate = FATE_ROUTE;
        meta.routed = 0;
        meta.ev = EV_NONE;
        meta.ev2 = EV_NONE;
        meta.bit_ok = 0;
        meta.agg_hit = 0;
        meta.fan_in = 0;
        meta.guard = 0;
        meta.guard_mask = 0;
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
        transition select(ig_intr_md.ingress_port[6:0]) {
            RECIRC_PORT_LOCAL: parse_recirc;
            default: parse_ethernet;
        }
    }
    state parse_recirc {
        pkt.extract(meta.recirc);
        meta.idx = meta.recirc.idx;  /* a retry's is computed again from the table */
        meta.pass_kind = meta.recirc.kind;
        meta.guard_mask = meta.recirc.guard_mask;  /* the retry's is looked up again */
        transition select(meta.recirc.kind) {
            RECIRC_HARVEST: parse_harvest;
            default: parse_ethernet;
        }
    }
    state parse_harvest {
        meta.sum_op = SUM_READ;
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

/* The sums of v_k (lo) and v_j = v_{k+32} (hi) of every slot: store (claim), saturating add
 * returning the new sum of v_k (every contribution; the completing one writes it into v_k),
 * read the sum of v_j (harvest). */
#define INA_SUM_PAIR(k, j)                                                                   \
    Register<sum_pair_t, bit<12>>(INA_SLOTS) slot_sum_##k;                                   \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_store_##k = {             \
        void apply(inout sum_pair_t value) {                                                 \
            value.lo = hdr.vals.v##k;                                                        \
            value.hi = hdr.vals.v##j;                                                        \
        }                                                                                    \
    };                                                                                       \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_add_##k = {               \
        void apply(inout sum_pair_t value, out int<32> rv) {                                 \
            value.lo = value.lo |+| hdr.vals.v##k;                                           \
            value.hi = value.hi |+| hdr.vals.v##j;                                           \
            rv = value.lo;                                                                   \
        }                                                                                    \
    };                                                                                       \
    RegisterAction<sum_pair_t, bit<12>, int<32>>(slot_sum_##k) sum_read_hi_##k = {           \
        void apply(inout sum_pair_t value, out int<32> rv) { rv = value.hi; }                \
    };
/* One table per pair register, its action chosen by meta.sum_op: a stage holds 16 logical
 * tables, and three call sites per register (store, add, read) would make three.  The key is
 * ternary: as exact-match tables, two of them in one stage got conflicting hash groups
 * (bfas: "Input xbar hash group 0 mergeable conflict"). */
#define INA_SUM_TABLE(k, j)                                                                  \
    action sum_store_do_##k() { sum_store_##k.execute(meta.idx[11:0]); }                      \
    action sum_add_do_##k() { hdr.vals.v##k = sum_add_##k.execute(meta.idx[11:0]); }          \
    action sum_read_do_##k() { hdr.vals.v##j = sum_read_hi_##k.execute(meta.idx[11:0]); }     \
    table sum_##k {                                                                          \
        key = {                                                                              \
            meta.sum_op: ternary @name("op");                                                \
            meta.dup_lo: ternary @name("dup_lo");                                            \
            meta.dup_hi: ternary @name("dup_hi");                                            \
        }                                                                                    \
        actions = { sum_store_do_##k; sum_add_do_##k; sum_read_do_##k; @defaultonly NoAction; } \
        const default_action = NoAction();                                                   \
        size = 4;                                                                            \
        const entries = {                                                                    \
            (SUM_STORE, 0, 0): sum_store_do_##k();                                           \
            (SUM_ADD, 0, 0): sum_add_do_##k();                                               \
            (SUM_READ, 0, 0): sum_read_do_##k();                                             \
        }                                                                                    \
    }
#define INA_SUM_APPLY(k, j) sum_##k.apply();

/* The overflow guard.  A value v is in the guard range of class c (fan-in <= 2^c) when bits
 * 31 .. 31-c of v are equal, i.e. -2^(31-c) <= v < 2^(31-c); fan-in such values cannot
 * overflow an int32 sum.  A guard table matches bits 31..25 of 16 values (c <= 6: fan-in
 * <= 64, the bitmap's limit) with two entries per (value, d, sign of the value): bit 31 = sign,
 * bit 31-d != sign.  Entries go by d, smallest first, so the first hit names the smallest d
 * and sets the code for it.  Each table takes a stage's ternary input crossbar: the key
 * bytes are the top bytes of 16 32-bit containers, and bf-p4c places no two guard tables in
 * one stage. */
#define INA_GUARD_KEY(k, j) hdr.vals.v##k[31:25]: ternary @name(#k);
#define INA_GUARD_KEY_HI(k, j) hdr.vals.v##j[31:25]: ternary @name(#j);
/* wildcards before (W) and after (T) the key column of one value */
#define INA_GW0
#define INA_GW1 _,
#define INA_GW2 INA_GW1 _,
#define INA_GW3 INA_GW2 _,
#define INA_GW4 INA_GW3 _,
#define INA_GW5 INA_GW4 _,
#define INA_GW6 INA_GW5 _,
#define INA_GW7 INA_GW6 _,
#define INA_GW8 INA_GW7 _,
#define INA_GW9 INA_GW8 _,
#define INA_GW10 INA_GW9 _,
#define INA_GW11 INA_GW10 _,
#define INA_GW12 INA_GW11 _,
#define INA_GW13 INA_GW12 _,
#define INA_GW14 INA_GW13 _,
#define INA_GW15 INA_GW14 _,
#define INA_GW16 INA_GW15 _,
#define INA_GW17 INA_GW16 _,
#define INA_GW18 INA_GW17 _,
#define INA_GW19 INA_GW18 _,
#define INA_GW20 INA_GW19 _,
#define INA_GW21 INA_GW20 _,
#define INA_GW22 INA_GW21 _,
#define INA_GW23 INA_GW22 _,
#define INA_GW24 INA_GW23 _,
#define INA_GW25 INA_GW24 _,
#define INA_GW26 INA_GW25 _,
#define INA_GW27 INA_GW26 _,
#define INA_GW28 INA_GW27 _,
#define INA_GW29 INA_GW28 _,
#define INA_GW30 INA_GW29 _,
#define INA_GW31 INA_GW30 _,
#define INA_GT0
#define INA_GT1 , _
#define INA_GT2 INA_GT1 , _
#define INA_GT3 INA_GT2 , _
#define INA_GT4 INA_GT3 , _
#define INA_GT5 INA_GT4 , _
#define INA_GT6 INA_GT5 , _
#define INA_GT7 INA_GT6 , _
#define INA_GT8 INA_GT7 , _
#define INA_GT9 INA_GT8 , _
#define INA_GT10 INA_GT9 , _
#define INA_GT11 INA_GT10 , _
#define INA_GT12 INA_GT11 , _
#define INA_GT13 INA_GT12 , _
#define INA_GT14 INA_GT13 , _
#define INA_GT15 INA_GT14 , _
#define INA_GT16 INA_GT15 , _
#define INA_GT17 INA_GT16 , _
#define INA_GT18 INA_GT17 , _
#define INA_GT19 INA_GT18 , _
#define INA_GT20 INA_GT19 , _
#define INA_GT21 INA_GT20 , _
#define INA_GT22 INA_GT21 , _
#define INA_GT23 INA_GT22 , _
#define INA_GT24 INA_GT23 , _
#define INA_GT25 INA_GT24 , _
#define INA_GT26 INA_GT25 , _
#define INA_GT27 INA_GT26 , _
#define INA_GT28 INA_GT27 , _
#define INA_GT29 INA_GT28 , _
#define INA_GT30 INA_GT29 , _
#define INA_GT31 INA_GT30 , _
/* the two entries (sign 0, sign 1) of the value in column i at distance d */
#define INA_GLO_1 7w0x20 &&& 7w0x60
#define INA_GHI_1 7w0x40 &&& 7w0x60
#define INA_GLO_2 7w0x10 &&& 7w0x50
#define INA_GHI_2 7w0x40 &&& 7w0x50
#define INA_GLO_3 7w0x08 &&& 7w0x48
#define INA_GHI_3 7w0x40 &&& 7w0x48
#define INA_GLO_4 7w0x04 &&& 7w0x44
#define INA_GHI_4 7w0x40 &&& 7w0x44
#define INA_GLO_5 7w0x02 &&& 7w0x42
#define INA_GHI_5 7w0x40 &&& 7w0x42
#define INA_GLO_6 7w0x01 &&& 7w0x41
#define INA_GHI_6 7w0x40 &&& 7w0x41
#define INA_GUARD_COL_(W, T, d, A) (W INA_GLO_##d T): A; (W INA_GHI_##d T): A;
#define INA_GUARD_COL(i, t, d, A) INA_GUARD_COL_(INA_GW##i, INA_GT##t, d, A)
/* the entries of distance d in all 16 columns */
#define INA_GUARD_D(d, A)                                                                    \
    INA_GUARD_COL(0, 15, d, A) INA_GUARD_COL(1, 14, d, A) INA_GUARD_COL(2, 13, d, A)         \
    INA_GUARD_COL(3, 12, d, A) INA_GUARD_COL(4, 11, d, A) INA_GUARD_COL(5, 10, d, A)         \
    INA_GUARD_COL(6, 9, d, A) INA_GUARD_COL(7, 8, d, A) INA_GUARD_COL(8, 7, d, A)            \
    INA_GUARD_COL(9, 6, d, A) INA_GUARD_COL(10, 5, d, A) INA_GUARD_COL(11, 4, d, A)          \
    INA_GUARD_COL(12, 3, d, A) INA_GUARD_COL(13, 2, d, A) INA_GUARD_COL(14, 1, d, A)         \
    INA_GUARD_COL(15, 0, d, A)
/* thermometer code of distance d: bits d-1 .. 5 */
#define INA_GUARD_ENTRIES(set)                                                               \
    INA_GUARD_D(1, set(0x3f)) INA_GUARD_D(2, set(0x3e)) INA_GUARD_D(3, set(0x3c))            \
    INA_GUARD_D(4, set(0x38)) INA_GUARD_D(5, set(0x30)) INA_GUARD_D(6, set(0x20))

/* sum_op in a container of its own: sharing one with fate, it made bfas see the exclusive
 * branches of the stage-2 block that write them as conflicting */
@pa_solitary("ingress", "meta.sum_op")
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
    /* no_route_drop, counted by routing's own miss action: routing is the last thing the
     * packet meets, and a counter behind it would cost a stage of its own */
    Counter<bit<64>, bit<8>>(EV_COUNT, CounterType_t.PACKETS_AND_BYTES) route_events;

    /* ---- slot state ---- */

    /* (round + 1, chunk) of the slot's aggregation; round word 0 = free (harvested), so
     * "free or older" is one comparison (round word <= round).  check: PRED_BOTH = MATCH,
     * PRED_LO = same round, another chunk (busy), else another round or free. */
    Register<pair32_t, bit<12>>(INA_SLOTS, {0, 0}) slot_tag;
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_check = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == hdr.ina.round + 1, value.hi == hdr.ina.chunk);
        }
    };
    /* Claim pass: take the slot if it is free or holds an older round (PRED_LO: taken). */
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_claim = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo <= hdr.ina.round);
            if (value.lo <= hdr.ina.round) {
                value.lo = hdr.ina.round + 1;
                value.hi = hdr.ina.chunk;
            }
        }
    };
    /* Harvest pass: free the slot if it still holds this chunk (PRED_BOTH: it did). */
    RegisterAction<pair32_t, bit<12>, bit<4>>(slot_tag) tag_free = {
        void apply(inout pair32_t value, out bit<4> rv) {
            rv = this.predicate(value.lo == hdr.ina.round + 1, value.hi == hdr.ina.chunk);
            if (value.lo == hdr.ina.round + 1 && value.hi == hdr.ina.chunk) {
                value.lo = 0;
            }
        }
    };

    /* The 64-bit contributor bitmap as two words; or_dup returns old & mine (the duplicate
     * test, computed by the SALU's spare ALU) and read returns the union for the harvest. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_lo;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[31:0]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_or_dup = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value & hdr.ina.bitmap[31:0];
            value = value | hdr.ina.bitmap[31:0];
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_lo) bitmap_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_bitmap_hi;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_set = {
        void apply(inout bit<32> value) { value = hdr.ina.bitmap[63:32]; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_or_dup = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value & hdr.ina.bitmap[63:32];
            value = value | hdr.ina.bitmap[63:32];
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_bitmap_hi) bitmap_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* Contributions so far (0: none pending).  add: PRED_LO = this one completes the slot,
     * PRED_HI = nothing pending (not for a consistent slot: once it completes, the bitmap
     * holds every contributor, so a packet of that chunk is a duplicate), neither =
     * absorbed.  The sums do not wait for this answer (a stray add on a slot with nothing
     * pending is overwritten by the next claim), so they can share its stage. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_count;
    /* claim: PRED_LO when it replaces pending contributions (a stale aggregation) */
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_count) count_claim = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value != 0);
            value = 1;
        }
    };
    RegisterAction<bit<32>, bit<12>, bit<4>>(slot_count) count_add = {
        void apply(inout bit<32> value, out bit<4> rv) {
            rv = this.predicate(value + 1 == meta.fan_in32, value == 0);
            if (value + 1 == meta.fan_in32) {
                value = 0;
            } else if (value != 0) {
                value = value + 1;
            }
        }
    };

    /* The guard codes of the slot's contributions, ORed byte by byte (an OR of thermometer
     * codes is the code of the smallest d among them): stored by the claim, ORed by each
     * contribution, read by the harvest.  Overflow is possible only if some contribution has
     * a value outside the class-c range, i.e. some byte has bit c-1 set; egress tests that
     * (guard & guard_mask), a SALU comparison cannot take the class as a mask. */
    Register<bit<32>, bit<12>>(INA_SLOTS, 0) slot_guard;
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_guard) guard_set = {
        void apply(inout bit<32> value) { value = meta.guard; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_guard) guard_or = {
        void apply(inout bit<32> value) { value = value | meta.guard; }
    };
    RegisterAction<bit<32>, bit<12>, bit<32>>(slot_guard) guard_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    /* one table keyed on the sum operation, as the sums */
    action guard_set_do() { guard_set.execute(meta.idx[11:0]); }
    action guard_or_do() { guard_or.execute(meta.idx[11:0]); }
    action guard_read_do() { meta.bridge.guard = guard_read.execute(meta.idx[11:0]); }
    table slot_guard_op {
        key = {
            meta.sum_op: ternary @name("op");
            meta.dup_lo: ternary @name("dup_lo");
            meta.dup_hi: ternary @name("dup_hi");
        }
        actions = { guard_set_do; guard_or_do; guard_read_do; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 4;
        const entries = {
            (SUM_STORE, 0, 0): guard_set_do();
            (SUM_ADD, 0, 0): guard_or_do();
            (SUM_READ, 0, 0): guard_read_do();
        }
    }

    INA_PAIRS(INA_SUM_PAIR)
    INA_PAIRS(INA_SUM_TABLE)

    /* the drop is decided here, not in a fate branch after the sums: every table that
     * follows them in the control flow shares their last stage */
    action drop_event(bit<8> ev) {
        meta.ev = ev;
        meta.fate = FATE_DROP;
        ig_dprsr_md.drop_ctl = 1;
    }

    /* ---- routing: (src, dst) exact first, then dst longest-prefix ---- */
    action set_next_hop(PortId_t port, bit<48> dst_mac, bit<48> src_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
    }
    action drop_no_route() {
        route_events.count(EV_NO_ROUTE_DROP);
        ig_dprsr_md.drop_ctl = 1;
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
    /* One operation per field and at most one action-data operand in each (two, such as
     * fan_in - 1, would cost a stage before this table: bf-p4c's $precompute). */
    action aggregate(bit<32> pool_base, bit<16> pool_size, bit<16> fan_in, bit<8> rank,
                     bit<32> agg_addr) {
        meta.idx = pool_base + meta.slot32;
        meta.room = pool_size |-| hdr.ina.slot;
        meta.fan_in = fan_in;
        meta.fan_in32 = (bit<32>)fan_in;
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
        size = 64;
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
    }

    /* ---- the overflow guard (see the top of this file) ---- */
    action set_guard_mask(bit<32> mask) {
        meta.guard_mask = mask;
    }
    /* fan-in -> 64 - 2^(c-1) for class c = ceil(log2(fan-in)); fan-in above 64 (more than
     * the bitmap's workers) gets the strictest class.  Fan-in 0 or 1 uses no slot. */
    table fan_in_class {
        key = { meta.fan_in: range @name("fan_in"); }
        actions = { set_guard_mask; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 8;
        const entries = {
            2 .. 2: set_guard_mask(0x01010101);
            3 .. 4: set_guard_mask(0x02020202);
            5 .. 8: set_guard_mask(0x04040404);
            9 .. 16: set_guard_mask(0x08080808);
            17 .. 32: set_guard_mask(0x10101010);
            33 .. 0xffff: set_guard_mask(0x20202020);
        }
    }
    action guard_code_a(bit<8> code) { meta.guard[7:0] = code; }
    action guard_code_b(bit<8> code) { meta.guard[15:8] = code; }
    action guard_code_c(bit<8> code) { meta.guard[23:16] = code; }
    action guard_code_d(bit<8> code) { meta.guard[31:24] = code; }
/* st: the table's stage.  Unpinned (tried before routing's flag) they placed in 12 stages too,
 * two in stage 0, but the event counters then shared a stage with four sum tables and bfas
 * reported a hash group conflict ("Input xbar hash group 0 mergeable conflict"). */
#define INA_GUARD_TABLE(table_name, PAIRS, KEY, set, st)                                     \
    @stage(st) table table_name {                                                            \
        key = { PAIRS(KEY) }                                                                 \
        actions = { set; @defaultonly NoAction; }                                            \
        const default_action = NoAction();                                                   \
        size = 192;                                                                          \
        const entries = { INA_GUARD_ENTRIES(set) }                                           \
    }
    INA_GUARD_TABLE(guard_lo_a, INA_PAIRS_A, INA_GUARD_KEY, guard_code_a, 0)
    INA_GUARD_TABLE(guard_lo_b, INA_PAIRS_B, INA_GUARD_KEY, guard_code_c, 3)
    INA_GUARD_TABLE(guard_hi_a, INA_PAIRS_A, INA_GUARD_KEY_HI, guard_code_b, 2)
    INA_GUARD_TABLE(guard_hi_b, INA_PAIRS_B, INA_GUARD_KEY_HI, guard_code_d, 4)

    /* Turn the packet into the ONE aggregate sent on to the PS (its values are the sums
     * after the harvest pass; OVERFLOW is added there). */
    action emit_aggregate() {
        hdr.ina.count = meta.fan_in;
        /* bits 2..0 are OVERFLOW, AGGREGATED, RETX: AGGREGATED set, the others cleared
         * (one deposit of a constant: the stage-1 emit needs no value computed before) */
        hdr.ina.flags[2:0] = INA_FLAG_AGGREGATED[2:0];
        hdr.ipv4.src_addr = meta.agg_addr;
    }

    /* ---- RESULT multicast: the PS's RESULT to the job's result address is replicated ---- */
    action multicast(MulticastGroupId_t group) {
        ig_tm_md.mcast_grp_a = group;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
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

    apply {
        /* The apply block is a sequence of short blocks, each one stage long, in the stage
         * order wanted: on Tofino 1 a table cannot run between the tables of a block (no
         * long branches), so the four guard tables, each a stage's ternary input crossbar,
         * sit between the slot logic's blocks (stages 0, 2, 3, 4), no later than the sum
         * tables that overwrite the values they read. */
        /* the arriving recirculation header is never sent on as it came: a recirculating
         * fate writes a new one */
        meta.recirc.setInvalid();
        /* one write each where the fate is decided: the port's two parts would take two */
        meta.recirc_port[6:0] = RECIRC_PORT_LOCAL;
        if (meta.pass_kind != RECIRC_HARVEST) {
            ina_aggregate.apply();
        }
        bitmap_rank.apply();
        meta.bridge.setValid();
        meta.bridge.replica = 0;
        meta.bridge.emitted = 0;
        meta.bridge.pad = 0;
        meta.bridge.guard = 0;
        meta.bridge.guard_mask = meta.guard_mask;  /* the harvest's; 0 on other passes */
        guard_lo_a.apply();

        /* stage 1: the packet checks and the slot's tag (which pass, which slot access) */
        if (!hdr.ipv4.isValid()) {
            drop_event(EV_NOT_IPV4_DROP);
        } else if (ig_prsr_md.parser_err != 0) {
            drop_event(EV_MALFORMED_DROP);
        } else if (hdr.ina.isValid() && hdr.udp.length != INA_UDP_LENGTH) {
            drop_event(EV_MALFORMED_DROP);
        } else if (meta.pass_kind == RECIRC_HARVEST) {
            /* second pass of the completing packet: v0..v31 hold their sums already */
            meta.tag_freed = tag_free.execute(meta.idx[11:0]);
        } else if (hdr.ipv4.ttl <= 1) {
            drop_event(EV_TTL_EXPIRED_DROP);
        } else if (hdr.ina.isValid()) {
            hdr.udp.checksum = 0;
            if (hdr.ina.pkt_type == INA_TYPE_GRAD) {
                if (hdr.ina.flags[0:0] == INA_FLAG_RETX[0:0]
                        || hdr.ina.flags[2:2] == INA_FLAG_OVERFLOW[2:2]) {
                    /* RETX; or a GRAD already flagged OVERFLOW, which goes to the PS as is */
                    meta.ev = EV_RETX_BYPASS;
                } else if (meta.agg_hit == 1) {
                    if (meta.bit_ok == 0 || meta.bit_rank != meta.rank) {
                        drop_event(EV_SPOOFED_BITMAP_DROP);
                    } else if (meta.room == 0 || meta.idx[31:12] != 0) {
                        meta.ev = EV_SLOT_OUT_OF_POOL;
                    } else if (meta.fan_in <= 1) {
                        /* the packet is the aggregate (a duplicate is sent again, as the
                         * v1model program claims its freed slot again; the PS drops it) */
                        emit_aggregate();
                        meta.ev = EV_AGGREGATED_OUT;
                        meta.bridge.emitted = 1;
                    } else if (meta.resub.isValid()) {
                        /* claim pass: PRED_LO = taken */
                        meta.tag_claimed = tag_claim.execute(meta.idx[11:0]);
                    } else {
                        meta.tag = tag_check.execute(meta.idx[11:0]);
                    }
                }
            }
        }

        /* stage 2: the bitmap, by the tag's answer; RESULT multicast (in stage 1 its match
         * shared a hash group with the slot index's: bfas "mergeable conflict") */
        if (meta.tag_freed != 0) {
            hdr.ina.bitmap[31:0] = bitmap_lo_read.execute(meta.idx[11:0]);
            hdr.ina.bitmap[63:32] = bitmap_hi_read.execute(meta.idx[11:0]);
        } else if (meta.tag_claimed == PRED_LO) {
            meta.sum_op = SUM_STORE;
            bitmap_lo_set.execute(meta.idx[11:0]);
            bitmap_hi_set.execute(meta.idx[11:0]);
        } else if (meta.tag_claimed != 0) {
            /* taken meanwhile (maybe by this chunk) or a newer round's */
            meta.fate = FATE_RETRY;
        } else if (meta.tag == PRED_BOTH) {
            meta.sum_op = SUM_ADD;
            meta.dup_lo = bitmap_lo_or_dup.execute(meta.idx[11:0]);
            meta.dup_hi = bitmap_hi_or_dup.execute(meta.idx[11:0]);
        } else if (meta.tag != 0) {
            if (meta.tag == PRED_LO || meta.pass_kind == RECIRC_RETRY) {
                /* same round, another chunk; or a retry that found another round again:
                 * forwarded unaggregated */
                meta.ev = EV_COLLISION;
            } else {
                /* free, or another round's: decide in a claim pass */
                meta.fate = FATE_RESUBMIT;
            }
        } else if (meta.fate == FATE_ROUTE && hdr.ina.isValid()
                   && hdr.ina.pkt_type == INA_TYPE_RESULT) {
            /* (not dropped by a check above) */
            result_multicast.apply();
        }
        guard_hi_a.apply();

        /* stage 3: the count, behind the duplicate test (one word per condition: a gateway
         * reads 4 bytes at most) */
        if (meta.sum_op == SUM_STORE) {
            meta.count_old = count_claim.execute(meta.idx[11:0]);
        } else if (meta.sum_op == SUM_ADD) {
            if (meta.dup_lo != 0) {
                drop_event(EV_DUPLICATE_DROP);
            } else if (meta.dup_hi != 0) {
                drop_event(EV_DUPLICATE_DROP);
            } else {
                meta.count_pred = count_add.execute(meta.idx[11:0]);
            }
        }
        guard_lo_b.apply();

        /* stage 4: the count's answer, and what the harvest and the claim decided (kept out
         * of stage 2, whose 16 logical tables the bitmap's branches fill) */
        if (meta.tag_freed != 0) {
            meta.ev = EV_AGGREGATED_OUT;
            meta.bridge.emitted = 1;
            if (meta.tag_freed != PRED_BOTH) {
                /* another round took the slot between the two passes (a packet of a past
                 * round completed it late): its sums are not this chunk's to vouch for */
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
            }
        } else if (meta.count_old != 0) {
            /* the claim's contribution is the slot's first */
            drop_event(EV_ABSORBED_DROP);
            if (meta.count_old == PRED_LO) {
                meta.ev2 = EV_STALE_RECLAIMED;
            }
        } else if (meta.count_pred == PRED_LO) {
            emit_aggregate();
            meta.fate = FATE_HARVEST;
        } else if (meta.count_pred == PRED_HI) {
            meta.ev = EV_COLLISION;
        } else if (meta.count_pred == PRED_NONE) {
            drop_event(EV_ABSORBED_DROP);
        }
        guard_hi_b.apply();
        fan_in_class.apply();
        /* the guard codes, which the slot keeps as it keeps the sums (before the fate's
         * chain, which may invalidate the bridge header this table's read writes) */
        slot_guard_op.apply();
        /* the events are known before routing (which counts its own miss) */
        if (meta.ev != EV_NONE) {
            events.count(meta.ev);
        }
        if (meta.ev2 != EV_NONE) {
            more_events.count(meta.ev2);
        }
        /* one chain over the fate (drops, multicast and the TTL are done by their actions):
         * its branches exclude each other by structure, so the back end may place them in
         * one stage (the port written by routing and by the recirculation is no
         * write-after-write conflict) */
        if (meta.fate == FATE_ROUTE) {
            /* route_dst reads what route_pair's hit wrote, so it is placed a stage later:
             * in one stage bfas takes the miss's route_dst for route_pair's successor, both
             * writing the same fields ("Conflicting instruction slot usage") */
            if (route_pair.apply().hit) {
                meta.routed = 1;
            }
            if (meta.routed == 0) {
                route_dst.apply();
            }
        } else if (meta.fate == FATE_RESUBMIT) {
            ig_dprsr_md.resubmit_type = 1;
            meta.resub.setValid();
            meta.resub.claim = 1;
            meta.resub.pad = 0;
        } else if (meta.fate == FATE_HARVEST) {
            /* round this pipe's recirculation port, egress bypassed: the recirculation header
             * goes first and the bridge header not at all */
            ig_tm_md.ucast_egress_port = meta.recirc_port;
            ig_tm_md.bypass_egress = 1;
            meta.recirc.setValid();
            meta.recirc.kind = RECIRC_HARVEST;
            meta.recirc.idx = meta.idx;
            meta.recirc.guard_mask = meta.guard_mask;
            meta.bridge.setInvalid();
        } else if (meta.fate == FATE_RETRY) {
            ig_tm_md.ucast_egress_port = meta.recirc_port;
            ig_tm_md.bypass_egress = 1;
            meta.recirc.setValid();
            meta.recirc.kind = RECIRC_RETRY;
            meta.recirc.idx = meta.idx;
            meta.recirc.guard_mask = meta.guard_mask;
            meta.bridge.setInvalid();
        }
        /* the sums, for every kind of pass at once (a duplicate adds nothing: the duplicate
         * test is in their key, so each is a table of its own that the back end places
         * beside the other blocks, not one block after them; written after the fate's
         * chain, they leave routing its early stages) */
        INA_PAIRS(INA_SUM_APPLY)
    }
}

control InaIngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(meta.resub);
        }
        pkt.emit(meta.recirc);
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------------------------
 * Egress: per-replica RESULT rewrite, overflow_out, IPv4 checksum.  The values are not
 * parsed here: egress never reads them, and they leave as the payload behind the INA header. */

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
        transition accept;
    }
}

control InaEgress(inout headers_t hdr, inout eg_meta_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    /* RESULT replicas whose egress_rid has no result_rewrite entry (a controller error). */
    Counter<bit<64>, bit<1>>(1, CounterType_t.PACKETS_AND_BYTES) replica_drops;
    /* overflow_out (same index map as InaIngress.events), counted where the aggregate
     * leaves, as in the one-pass layout. */
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
    apply {
        if (meta.bridge.replica == 1) {
            result_rewrite.apply();
        }
        /* the harvest's guard codes against the slot's class (0 on other packets) */
        meta.bridge.guard = meta.bridge.guard & meta.bridge.guard_mask;
        if (meta.bridge.guard != 0) {
            hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
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
