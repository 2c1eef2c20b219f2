/* inart: constants shared by every INA program (v1model, TNA).  DESIGN.md sections 3 and 4.
 *
 * INA_N is THE compile-time number of 32-bit values per INA packet.  Change it here only;
 * `make p4` records it in p4src/build/build-info.json, which hosts read to check their N. */
#ifndef INART_CONSTANTS_P4
#define INART_CONSTANTS_P4

#ifndef INA_N
#define INA_N 32
#endif

/* Aggregator slots on one switch, shared by all jobs (each job's pool is a range of them). */
#define INA_SLOTS 4096

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> IPPROTO_UDP = 17;

const bit<16> INA_GRAD_PORT = 47000;
const bit<16> INA_RESULT_PORT = 47001;

const bit<8> INA_TYPE_GRAD = 1;
const bit<8> INA_TYPE_RESULT = 2;
/* type 3 (ACK/control) and anything else is routed like any IPv4 packet. */

const bit<8> INA_FLAG_RETX = 0x01;
const bit<8> INA_FLAG_AGGREGATED = 0x02;
const bit<8> INA_FLAG_OVERFLOW = 0x04;

/* UDP length of a well-formed INA packet: UDP header + 24-byte INA header + N int32 values. */
const bit<16> INA_UDP_LENGTH = 8 + 24 + 4 * INA_N;

/* Indexes of the per-switch event counter (packets and bytes).  The controller reads them
 * over P4Runtime; `make p4` exports this name -> index map into build-info.json, so the
 * numbers are written down only here.  Names ending in _DROP mark packets the switch drops. */
#define EV_NOT_IPV4_DROP 0
#define EV_NO_ROUTE_DROP 1
#define EV_TTL_EXPIRED_DROP 2
#define EV_MALFORMED_DROP 3
#define EV_SPOOFED_BITMAP_DROP 4
#define EV_DUPLICATE_DROP 5
#define EV_ABSORBED_DROP 6
#define EV_AGGREGATED_OUT 7
#define EV_COLLISION 8
#define EV_RETX_BYPASS 9
#define EV_SLOT_OUT_OF_POOL 10
#define EV_STALE_RECLAIMED 11
#define EV_OVERFLOW_OUT 12
#define EV_RESULT_MULTICAST 13
#define EV_COUNT 16

#endif
