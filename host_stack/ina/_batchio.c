/* Batched UDP I/O and the PS's per-packet accept rules, for the INA host stack.
 *
 * Python calls each function once per batch of packets (hundreds), never once per packet:
 * - send():      sendmmsg of rows of a packed (rows, L) uint8 array to per-row destinations,
 *                optionally as UDP GSO messages of many datagrams each;
 * - recv():      recvmmsg into a (B, S) uint8 array, with lengths and IPv4 sources, GSO
 *                batches (UDP_GRO) split back into datagrams;
 * - aggregate(): the ChunkAggregator rules (host_stack/ina/aggregator.py documents them) over
 *                a batch of GRAD packets, in arrival order, on the aggregator's numpy state;
 * - grads():     the same rules straight from received rows, for the PS's usual batch;
 * - recv() with an impaired socket's queue, and reorder(): its arrivals held back and
 *                delivered when due;
 * - results():   a worker's usual RESULTs (this round's, new, never resent) taken into the
 *                state of the PS that sent them, the rest left to the transport's Python;
 * - pass_over(): a worker's chunks below a completed one marked as passed over (RACK);
 * - fill():      a worker's GRAD payloads written straight from its int32 or float32 values;
 * - absmax(), dequantize(): the scale of a float all-reduce, and its int32 sums back to
 *                float32, each one pass over the vector.
 * The per-value loops (byte swaps, sums, conversions) are built twice, for AVX2 and for the
 * x86-64 baseline, and the machine's best is taken when the module loads (GCC's
 * target_clones): on a 25 MB all-reduce they were most of the host stack's user time.
 * Arguments are numpy arrays passed through the buffer protocol; host_stack/ina/batchio.py
 * checks their dtypes and shapes, so this file only checks sizes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#define HAVE_AVX2_KERNELS 1
#else
#define VECTOR_CLONES
#endif

#define MAX_VLEN 1024 /* UIO_MAXIOV: the most messages one sendmmsg/recvmmsg takes */
#define MAX_SEGS 64   /* UDP_MAX_SEGMENTS of older kernels: datagrams per GSO message */
#define MAX_IOV 4096  /* iovecs per sendmmsg call (on the stack: 64 KiB) */
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Round to nearest, ties to even (numpy's rint), to int32: one SSE2 instruction where there
 * is one, under the default rounding mode. */
static inline int32_t rint_i32(double x) {
#if defined(__SSE2__)
    return _mm_cvtsd_si32(_mm_set_sd(x));
#else
    return (int32_t)lrint(x);
#endif
}

/* ---- per-value loops (see the top of this file) ------------------------------------- */

/* out[j] = in[j] with its 4 bytes reversed: wire order <-> host order. */
VECTOR_CLONES static void swap_words(uint8_t *restrict out, const uint8_t *restrict in,
                                     Py_ssize_t m) {
    for (Py_ssize_t j = 0; j < m; j++) {
        uint32_t w;
        memcpy(&w, in + 4 * j, 4);
        w = __builtin_bswap32(w);
        memcpy(out + 4 * j, &w, 4);
    }
}

/* s[j] += the j-th int32 of vals (wire order, or host order when ``wire_order`` is 0). */
VECTOR_CLONES static void add_words(int64_t *restrict s, const uint8_t *restrict vals,
                                    Py_ssize_t n, int wire_order) {
    if (wire_order)
        for (Py_ssize_t j = 0; j < n; j++) {
            uint32_t w;
            memcpy(&w, vals + 4 * j, 4);
            s[j] += (int32_t)__builtin_bswap32(w);
        }
    else
        for (Py_ssize_t j = 0; j < n; j++) {
            int32_t w;
            memcpy(&w, vals + 4 * j, 4);
            s[j] += w;
        }
}

/* Whether any s[j] lies outside int32. */
VECTOR_CLONES static int outside_int32(const int64_t *s, Py_ssize_t n) {
    int64_t lo = 0, hi = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        lo = s[j] < lo ? s[j] : lo;
        hi = s[j] > hi ? s[j] : hi;
    }
    return hi > INT32_MAX || lo < INT32_MIN;
}

/* The largest |x| of m float32 values as its bit pattern (sign cleared): for finite values
 * the bit patterns order as the magnitudes do, inf is 0x7f800000 and every NaN above it. */
VECTOR_CLONES static uint32_t abs_bits_max(const uint8_t *in, Py_ssize_t m) {
    uint32_t top = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        uint32_t w;
        memcpy(&w, in + 4 * j, 4);
        w &= 0x7fffffffu;
        top = w > top ? w : top;
    }
    return top;
}

/* out[j] = float32(double(in[j]) * scale): the int32 sums back to float32, the product exact
 * (scale a power of two) and the cast the one rounding, as numpy's float64 path did. */
VECTOR_CLONES static void int_to_float(float *restrict out, const int32_t *restrict in,
                                       Py_ssize_t m, double scale) {
    for (Py_ssize_t j = 0; j < m; j++) out[j] = (float)((double)in[j] * scale);
}

/* out[j] = rint(in[j] * 2**exp) as big-endian int32, for -126 <= exp <= 127: then the float32
 * product is exact (a power-of-two scale of a value whose result fits int32; one that falls
 * below the normal range rounds to 0 either way), so rounding it to nearest-even equals
 * rint of the double product, which other exponents take. */
static void quantize_scalar(uint8_t *out, const float *in, Py_ssize_t m, int exp) {
    double scale = ldexp(1.0, exp);
    for (Py_ssize_t j = 0; j < m; j++) {
        uint32_t w = htonl((uint32_t)rint_i32((double)in[j] * scale));
        memcpy(out + 4 * j, &w, 4);
    }
}

#ifdef HAVE_AVX2_KERNELS
__attribute__((target("avx2"))) static void quantize_avx2(uint8_t *out, const float *in,
                                                          Py_ssize_t m, int exp) {
    const __m256 scale = _mm256_set1_ps(ldexpf(1.0f, exp));
    const __m256i swap = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
                                          3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
    Py_ssize_t j = 0;
    for (; j + 8 <= m; j += 8) {  /* _mm256_cvtps_epi32 rounds to nearest-even (MXCSR) */
        __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(in + j), scale));
        _mm256_storeu_si256((__m256i *)(out + 4 * j), _mm256_shuffle_epi8(q, swap));
    }
    quantize_scalar(out + 4 * j, in + j, m - j, exp);
}
static int have_avx2;
#endif

static void quantize(uint8_t *out, const float *in, Py_ssize_t m, int exp) {
#ifdef HAVE_AVX2_KERNELS
    if (have_avx2 && exp >= -126 && exp <= 127) {
        quantize_avx2(out, in, m, exp);
        return;
    }
#endif
    quantize_scalar(out, in, m, exp);
}

static int get_buf(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t min_len,
                   const char *name) {
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len < min_len) {
        PyErr_Format(PyExc_ValueError, "_batchio: %s holds %zd bytes, need %zd", name,
                     view->len, min_len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The buffers one call holds, released together however the call ends. */
typedef struct {
    Py_buffer b[16];
    int held;
} Views;

static int hold(Views *v, PyObject *obj, int writable, Py_ssize_t min_len, const char *name) {
    if (get_buf(obj, &v->b[v->held], writable, min_len, name) < 0) return -1;
    v->held++;
    return 0;
}

static void release(Views *v) {
    while (v->held) PyBuffer_Release(&v->b[--v->held]);
}

/* send(fd, rows, row_len, idx, ips, ports, segs) -> (done, errors, last_errno, segs)
 * Sends rows[idx[i]] to (ips[i], ports[i]) for i in order (ips/ports of length 1 are used for
 * every row).  With segs > 1, up to ``segs`` consecutive rows to the same destination go as
 * one UDP GSO message (UDP_SEGMENT = row_len): the kernel cuts it into the same datagrams,
 * with one trip through the stack instead of one per datagram.  Where the kernel refuses GSO
 * (EIO/EINVAL), the call goes on without it and returns segs = 1 for the caller to keep.
 * Stops at the first EAGAIN: ``done`` rows were handed to the kernel or failed (``errors``
 * of them, the last with ``last_errno``); the caller retries the rest. */
static PyObject *py_send(PyObject *self, PyObject *args) {
    int fd, segs;
    Py_ssize_t row_len;
    PyObject *o_rows, *o_idx, *o_ips, *o_ports;
    if (!PyArg_ParseTuple(args, "iOnOOOi", &fd, &o_rows, &row_len, &o_idx, &o_ips, &o_ports,
                          &segs))
        return NULL;
    Views v = {.held = 0};
    PyObject *result = NULL;
    if (hold(&v, o_rows, 0, 0, "rows") < 0 || hold(&v, o_idx, 0, 0, "idx") < 0 ||
        hold(&v, o_ips, 0, 4, "ips") < 0 || hold(&v, o_ports, 0, 2, "ports") < 0)
        goto out;
    Py_buffer *rows = &v.b[0], *idx = &v.b[1], *ips = &v.b[2], *ports = &v.b[3];
    Py_ssize_t count = idx->len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t n_dst = ips->len / 4;
    if ((n_dst != 1 && n_dst != count) || ports->len / 2 != n_dst || row_len <= 0) {
        PyErr_SetString(PyExc_ValueError, "_batchio.send: ips/ports must have 1 or len(idx) "
                                          "entries each, row_len > 0");
        goto out;
    }
    if (segs < 1) segs = 1;
    if (segs > MAX_SEGS) segs = MAX_SEGS;
    if ((Py_ssize_t)segs * row_len > 65000) segs = (int)(65000 / row_len);
    if (segs < 1) segs = 1;
    const int64_t *ix = idx->buf;
    Py_ssize_t n_rows = rows->len / row_len;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (ix[i] < 0 || ix[i] >= n_rows) {
            PyErr_Format(PyExc_IndexError, "_batchio.send: row %lld of %zd", (long long)ix[i],
                         n_rows);
            goto out;
        }
    }
    const uint32_t *ip = ips->buf;
    const uint16_t *port = ports->buf;
    const char *base = rows->buf;
    Py_ssize_t done = 0, errors = 0;
    int last_errno = 0;
    struct mmsghdr msgs[MAX_VLEN];
    struct iovec iov[MAX_IOV];
    struct sockaddr_in dst[MAX_VLEN];
    int n_in[MAX_VLEN];
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl[MAX_VLEN];
    Py_BEGIN_ALLOW_THREADS
    while (done < count) {
        int m = 0, used = 0; /* messages built, iovecs used */
        Py_ssize_t i = done;
        while (m < MAX_VLEN && used + segs <= MAX_IOV && i < count) {
            Py_ssize_t d = n_dst == 1 ? 0 : i;
            int k = 0;
            while (k < segs && i + k < count &&
                   (n_dst == 1 || (ip[i + k] == ip[d] && port[i + k] == port[d]))) {
                iov[used + k].iov_base = (void *)(base + ix[i + k] * row_len);
                iov[used + k].iov_len = (size_t)row_len;
                k++;
            }
            memset(&dst[m], 0, sizeof dst[m]);
            dst[m].sin_family = AF_INET;
            dst[m].sin_addr.s_addr = htonl(ip[d]);
            dst[m].sin_port = htons(port[d]);
            memset(&msgs[m], 0, sizeof msgs[m]);
            msgs[m].msg_hdr.msg_name = &dst[m];
            msgs[m].msg_hdr.msg_namelen = sizeof dst[m];
            msgs[m].msg_hdr.msg_iov = &iov[used];
            msgs[m].msg_hdr.msg_iovlen = (size_t)k;
            if (k > 1) {
                msgs[m].msg_hdr.msg_control = ctl[m].buf;
                msgs[m].msg_hdr.msg_controllen = sizeof ctl[m].buf;
                struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[m].msg_hdr);
                cm->cmsg_level = SOL_UDP;
                cm->cmsg_type = UDP_SEGMENT;
                cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
                uint16_t gso = (uint16_t)row_len;
                memcpy(CMSG_DATA(cm), &gso, sizeof gso);
            }
            n_in[m++] = k;
            used += k;
            i += k;
        }
        int sent = sendmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT);
        if (sent > 0) {
            for (int j = 0; j < sent; j++) done += n_in[j];
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else if (n_in[0] > 1 && (errno == EIO || errno == EINVAL)) {
            segs = 1; /* no GSO on this path: plain datagrams from here on */
        } else { /* this datagram failed (e.g. no route): count it, go on with the next */
            last_errno = errno;
            errors += n_in[0];
            done += n_in[0];
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("nnii", done, errors, last_errno, segs);
out:
    release(&v);
    return result;
}

/* The rows of one receive: recvmmsg into rows of ``row_len`` bytes of ``base`` (room for
 * ``want`` messages of ``segs`` rows), lengths, IPv4 sources (host order) and, where
 * ``stamp`` is given, kernel arrival times; the count of rows, or -1 with ``*err`` set.
 * Message j gets rows [j segs, (j+1) segs): a socket with UDP_GRO may be handed a GSO batch
 * of up to ``segs`` equal datagrams as one message, which is split back into rows here (then
 * moved down so the rows are contiguous).  A datagram longer than ``row_len`` reports
 * row_len + 1; one of a GSO batch whose size is not row_len reports that size: callers
 * reject both.  Runs without the GIL. */
static Py_ssize_t recv_rows(int fd, char *base, Py_ssize_t row_len, int segs, Py_ssize_t want,
                            int32_t *ln, uint32_t *ip, uint16_t *port, double *stamp,
                            int *err) {
    struct mmsghdr msgs[MAX_VLEN];
    struct iovec iov[MAX_VLEN];
    struct sockaddr_in src[MAX_VLEN];
    union {
        char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl[MAX_VLEN];
    for (Py_ssize_t j = 0; j < want; j++) {
        iov[j].iov_base = base + j * segs * row_len;
        iov[j].iov_len = (size_t)(segs * row_len);
        memset(&msgs[j], 0, sizeof msgs[j]);
        msgs[j].msg_hdr.msg_name = &src[j];
        msgs[j].msg_hdr.msg_namelen = sizeof src[j];
        msgs[j].msg_hdr.msg_iov = &iov[j];
        msgs[j].msg_hdr.msg_iovlen = 1;
        msgs[j].msg_hdr.msg_control = ctl[j].buf;
        msgs[j].msg_hdr.msg_controllen = sizeof ctl[j].buf;
    }
    int got;
    do {
        got = recvmmsg(fd, msgs, (unsigned)want, MSG_DONTWAIT, NULL);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        *err = errno;
        return -1;
    }
    Py_ssize_t out = 0;
    for (int j = 0; j < got; j++) {
        struct msghdr *h = &msgs[j].msg_hdr;
        Py_ssize_t len = msgs[j].msg_len, gso = 0, n = 1;
        double at = 0.0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
            if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
                int g;
                memcpy(&g, CMSG_DATA(cm), sizeof g);
                gso = g;
            } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(cm), sizeof ts);
                at = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
            }
        }
        if (gso > 0 && len > gso) {
            n = (len + gso - 1) / gso;
            if (n > segs) n = segs;
        }
        if (out != j * segs)
            memmove(base + out * row_len, base + j * segs * row_len, (size_t)(n * row_len));
        for (Py_ssize_t d = 0; d < n; d++) {
            Py_ssize_t dl = n == 1 ? len : (d < n - 1 ? gso : len - (n - 1) * gso);
            if (n > 1 && gso != row_len) dl = gso;
            if (dl > row_len || (h->msg_flags & MSG_TRUNC)) dl = row_len + 1;
            ln[out + d] = (int32_t)dl;
            ip[out + d] = src[j].sin_family == AF_INET ? ntohl(src[j].sin_addr.s_addr) : 0;
            port[out + d] = src[j].sin_family == AF_INET ? ntohs(src[j].sin_port) : 0;
            if (stamp) stamp[out + d] = at;
        }
        out += n;
    }
    return out;
}

/* An impaired socket's held arrivals (host_stack/ina/impair.py): the arrays of its
 * ``queue`` tuple, (upcoming, state, first, q_buf, q_lens, q_ips, q_ports, q_due).
 * state (int64): UP the next upcoming entry, RECEIVED rows received so far, HEAD and TAIL the
 * held rows q_*[HEAD:TAIL], HELD rows held so far.  first[0] is when q[HEAD] is due (inf:
 * nothing held). */
enum { ST_UP, ST_RECEIVED, ST_HEAD, ST_TAIL, ST_HELD, N_STATE };

typedef struct {
    const int64_t *up;
    Py_ssize_t n_up, cap;
    int64_t *st;
    double *first, *due;
    char *buf;
    int32_t *lens;
    uint32_t *ips;
    uint16_t *ports;
} Held;

/* Holds the queue's 8 arrays in ``v`` (rows of ``row_len`` bytes); -1 with an error set. */
static int hold_queue(Views *v, PyObject *queue, Py_ssize_t row_len, Held *q) {
    PyObject *o[8];
    if (!PyArg_ParseTuple(queue, "OOOOOOOO;_batchio: queue is (upcoming, state, first, "
                          "q_buf, q_lens, q_ips, q_ports, q_due)", &o[0], &o[1], &o[2],
                          &o[3], &o[4], &o[5], &o[6], &o[7]))
        return -1;
    int at = v->held;
    if (hold(v, o[0], 0, 0, "upcoming") < 0 ||
        hold(v, o[1], 1, N_STATE * (Py_ssize_t)sizeof(int64_t), "state") < 0 ||
        hold(v, o[2], 1, (Py_ssize_t)sizeof(double), "first") < 0 ||
        hold(v, o[7], 1, 0, "q_due") < 0)
        return -1;
    q->cap = v->b[at + 3].len / (Py_ssize_t)sizeof(double);
    if (hold(v, o[3], 1, q->cap * row_len, "q_buf") < 0 ||
        hold(v, o[4], 1, q->cap * 4, "q_lens") < 0 ||
        hold(v, o[5], 1, q->cap * 4, "q_ips") < 0 ||
        hold(v, o[6], 1, q->cap * 2, "q_ports") < 0)
        return -1;
    q->up = v->b[at].buf;
    q->n_up = v->b[at].len / (Py_ssize_t)sizeof(int64_t);
    q->st = v->b[at + 1].buf;
    q->first = v->b[at + 2].buf;
    q->due = v->b[at + 3].buf;
    q->buf = v->b[at + 4].buf;
    q->lens = v->b[at + 5].buf;
    q->ips = v->b[at + 6].buf;
    q->ports = v->b[at + 7].buf;
    const int64_t *st = q->st;
    if (st[ST_HEAD] < 0 || st[ST_TAIL] < st[ST_HEAD] || st[ST_TAIL] > q->cap || st[ST_UP] < 0 ||
        st[ST_UP] > q->n_up) {
        /* a state no room can mend: an error, where -1 would have the caller loop */
        PyErr_SetString(PyExc_ValueError, "_batchio: queue state out of range");
        return -1;
    }
    return 0;
}

/* Whether the queue has room for a receive of ``k`` rows: upcoming's last entry is at least
 * RECEIVED + k (each row's fate is drawn), and TAIL + k fits the queue. */
static int has_room(const Held *q, Py_ssize_t k) {
    const int64_t *st = q->st;
    return st[ST_TAIL] + k <= q->cap &&
           (!k || (st[ST_UP] < q->n_up && q->up[q->n_up - 1] >= st[ST_RECEIVED] + k));
}

/* Of the ``k`` rows just received into buf/lens/ips/ports, those whose arrival number
 * (counted over every row received) is one of upcoming[state[UP]:] (ascending) leave the
 * batch, keeping the others' order, for the queue's tail, each due ``delay`` after its
 * kernel stamp (CLOCK_REALTIME, ``offset`` ahead of the monotonic ``now``; ``now`` where it
 * has none or a later one), and never before the row ahead of it; then the queue's rows due
 * by ``now`` follow the batch, oldest first, up to ``limit`` rows in all.  The count of rows
 * now in buf.  One pass and no Python per packet, so the instrument costs the processes it
 * measures next to nothing, as netem's queue in the kernel would.  Needs has_room(q, k). */
static Py_ssize_t hold_back(Held *q, char *buf, Py_ssize_t row_len, int32_t *lens,
                            uint32_t *ips, uint16_t *ports, const double *stamps,
                            Py_ssize_t k, Py_ssize_t limit, double delay, double now,
                            double offset) {
    int64_t *st = q->st;
    int64_t received = st[ST_RECEIVED], head = st[ST_HEAD], tail = st[ST_TAIL];
    Py_ssize_t u = (Py_ssize_t)st[ST_UP], kept = 0;
    double real_now = now + offset;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (u < q->n_up && q->up[u] == received + i) {
            u++;
            memcpy(q->buf + tail * row_len, buf + i * row_len, (size_t)row_len);
            q->lens[tail] = lens[i];
            q->ips[tail] = ips[i];
            q->ports[tail] = ports[i];
            double at = stamps[i] > 0 && stamps[i] < real_now ? stamps[i] : real_now;
            double due = at - offset + delay;
            if (tail > head && due < q->due[tail - 1]) due = q->due[tail - 1];
            q->due[tail++] = due;
            st[ST_HELD]++;
            continue;
        }
        if (kept != i) {
            memcpy(buf + kept * row_len, buf + i * row_len, (size_t)row_len);
            lens[kept] = lens[i];
            ips[kept] = ips[i];
            ports[kept] = ports[i];
        }
        kept++;
    }
    while (head < tail && q->due[head] <= now && kept < limit) {
        memcpy(buf + kept * row_len, q->buf + head * row_len, (size_t)row_len);
        lens[kept] = q->lens[head];
        ips[kept] = q->ips[head];
        ports[kept] = q->ports[head];
        kept++;
        head++;
    }
    if (head == tail) head = tail = 0;
    st[ST_UP] = u;
    st[ST_RECEIVED] = received + k;
    st[ST_HEAD] = head;
    st[ST_TAIL] = tail;
    q->first[0] = head < tail ? q->due[head] : HUGE_VAL;
    return kept;
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* recv(fd, buf, row_len, segs, lens, ips, ports[, stamps[, queue, delay]]) -> count
 * Receives what is waiting without blocking, into rows of ``row_len`` bytes of ``buf``, its
 * datagrams' lengths in lens[] and sources in ips[]/ports[] (host order), in arrival order
 * (recv_rows); the count of datagrams.  With ``stamps`` (float64 per row) on a socket with
 * SO_TIMESTAMPNS, each datagram's kernel arrival time (CLOCK_REALTIME seconds; 0 where none
 * came).  With an impaired socket's ``queue`` too (hold_queue), its arrivals are held back
 * ``delay`` seconds and the held ones due now delivered after them (hold_back), in the same
 * call: -1, before anything is received, where the queue has no room for a whole receive
 * (the caller makes room and calls again). */
static PyObject *py_recv(PyObject *self, PyObject *args) {
    int fd, segs;
    Py_ssize_t row_len;
    double delay = 0.0;
    PyObject *o_buf, *o_lens, *o_ips, *o_ports, *o_stamps = NULL, *o_queue = NULL;
    if (!PyArg_ParseTuple(args, "iOniOOO|OOd", &fd, &o_buf, &row_len, &segs, &o_lens, &o_ips,
                          &o_ports, &o_stamps, &o_queue, &delay))
        return NULL;
    Views v = {.held = 0};
    PyObject *result = NULL;
    if (hold(&v, o_lens, 1, 4, "lens") < 0) return NULL;
    Py_ssize_t rows = v.b[0].len / 4;
    if (segs < 1) segs = 1;
    Py_ssize_t want = rows / segs;
    if (want > MAX_VLEN) want = MAX_VLEN;
    if (row_len <= 0 || want < 1) {
        PyErr_SetString(PyExc_ValueError, "_batchio.recv: row_len > 0 and segs <= len(lens)");
        goto out;
    }
    if (hold(&v, o_buf, 1, rows * row_len, "buf") < 0 ||
        hold(&v, o_ips, 1, rows * 4, "ips") < 0 || hold(&v, o_ports, 1, rows * 2, "ports") < 0)
        goto out;
    int stamped = o_stamps != NULL && o_stamps != Py_None;
    if (stamped && hold(&v, o_stamps, 1, rows * (Py_ssize_t)sizeof(double), "stamps") < 0)
        goto out;
    Held q;
    int held = o_queue != NULL && o_queue != Py_None;
    if (held && !stamped) {
        PyErr_SetString(PyExc_ValueError, "_batchio.recv: a queue needs stamps");
        goto out;
    }
    if (held && hold_queue(&v, o_queue, row_len, &q) < 0) goto out;
    double now = 0.0;
    if (held) {
        if (!has_room(&q, want * segs)) {
            result = PyLong_FromLong(-1);
            goto out;
        }
        now = clock_s(CLOCK_MONOTONIC);
    }
    char *base = v.b[1].buf;
    int32_t *ln = v.b[0].buf;
    uint32_t *ip = v.b[2].buf;
    uint16_t *port = v.b[3].buf;
    double *stamp = stamped ? v.b[4].buf : NULL;
    int err = 0;
    Py_ssize_t got;
    Py_BEGIN_ALLOW_THREADS
    got = recv_rows(fd, base, row_len, segs, want, ln, ip, port, stamp, &err);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        goto out;
    }
    if (held && (got || q.first[0] <= now))
        got = hold_back(&q, base, row_len, ln, ip, port, stamp, got, rows, delay, now,
                        clock_s(CLOCK_REALTIME) - clock_s(CLOCK_MONOTONIC));
    result = PyLong_FromSsize_t(got);
out:
    release(&v);
    return result;
}

/* reorder(buf, row_len, lens, ips, ports, stamps, k, limit, queue, delay, now, offset)
 *     -> rows in buf
 * hold_back over ``k`` rows already in buf (with their kernel stamps), at a given ``now``
 * (time.monotonic()) and ``offset`` (CLOCK_REALTIME minus it): recv's second half, for rows
 * that came some other way (tests give them times of their own).  The caller guarantees
 * the room (has_room). */
static PyObject *py_reorder(PyObject *self, PyObject *args) {
    PyObject *o[6];
    Py_ssize_t row_len, k, limit;
    double delay, now, offset;
    if (!PyArg_ParseTuple(args, "OnOOOOnnOddd", &o[0], &row_len, &o[1], &o[2], &o[3], &o[4],
                          &k, &limit, &o[5], &delay, &now, &offset))
        return NULL;
    Views v = {.held = 0};
    PyObject *result = NULL;
    if (row_len <= 0 || k < 0 || limit < k) {
        PyErr_SetString(PyExc_ValueError, "_batchio.reorder: row_len > 0 and 0 <= k <= limit");
        return NULL;
    }
    Held q;
    if (hold(&v, o[0], 1, limit * row_len, "buf") < 0 ||
        hold(&v, o[1], 1, limit * 4, "lens") < 0 || hold(&v, o[2], 1, limit * 4, "ips") < 0 ||
        hold(&v, o[3], 1, limit * 2, "ports") < 0 ||
        hold(&v, o[4], 1, k * (Py_ssize_t)sizeof(double), "stamps") < 0 ||
        hold_queue(&v, o[5], row_len, &q) < 0)
        goto out;
    if (!has_room(&q, k)) {
        PyErr_SetString(PyExc_ValueError, "_batchio.reorder: no room (queue or upcoming)");
        goto out;
    }
    result = PyLong_FromSsize_t(hold_back(&q, v.b[0].buf, row_len, v.b[1].buf, v.b[2].buf,
                                          v.b[3].buf, v.b[4].buf, k, limit, delay, now,
                                          offset));
out:
    release(&v);
    return result;
}

/* Verdicts and counters: the same codes and order as host_stack/ina/aggregator.py. */
enum { ACCEPTED, COMPLETED, ANSWER_LATE, DROPPED, DUPLICATE };
enum {
    C_DROP_BAD_CHUNK, C_DROP_BAD_BITMAP, C_DROP_BAD_COUNT, C_LATE_REQUEST, C_DROP_STALE_ROUND,
    C_DROP_FUTURE_ROUND, C_DROP_DUPLICATE, C_ACCEPTED, C_CONTRIBUTIONS, C_COMPLETED,
    C_SUM_EXCEEDS_INT32, N_COUNTERS
};

/* An aggregator's state (host_stack/ina/aggregator.py), as aggregate() and grads() hold it. */
typedef struct {
    int64_t *completed, *sum_round, *sums, *c;
    uint64_t *bits;
    uint8_t *retx_seen;
    uint32_t *epoch;
    Py_ssize_t n_chunks, n;
    uint64_t all_bits;
    uint32_t call;
    int skip_rounds; /* a chunk may sit out rounds (all-reduce calls that do not reach it) */
} Agg;

enum { STOP = -1 };

/* The accept rules for one packet: its verdict, or STOP before a packet that would start a
 * new round on a chunk completed earlier in this call (``epoch`` == ``call``): the caller
 * must turn that completion into a RESULT first.  ``vals`` are its N int32 values, in host
 * order, or as they came on the wire (``wire_order``). */
static int accept_grad(Agg *a, uint32_t ch, int64_t r, uint64_t bm, unsigned count, int retx,
                  const uint8_t *vals, int wire_order) {
    int64_t *c = a->c;
    if (ch >= a->n_chunks) { c[C_DROP_BAD_CHUNK]++; return DROPPED; }
    if (bm == 0 || (bm & ~a->all_bits)) { c[C_DROP_BAD_BITMAP]++; return DROPPED; }
    if (count != (unsigned)__builtin_popcountll(bm)) { c[C_DROP_BAD_COUNT]++; return DROPPED; }
    int64_t done = a->completed[ch];
    if (r == done) { c[C_LATE_REQUEST]++; return ANSWER_LATE; }
    if (r < done) { c[C_DROP_STALE_ROUND]++; return DROPPED; }
    if (r > done + 1 && !a->skip_rounds) { c[C_DROP_FUTURE_ROUND]++; return DROPPED; }
    Py_ssize_t n = a->n;
    int64_t *s = a->sums + (Py_ssize_t)ch * n;
    if (a->sum_round[ch] != r) {
        if (a->epoch[ch] == a->call) return STOP;
        a->sum_round[ch] = r;
        a->bits[ch] = 0;
        a->retx_seen[ch] = 0;
        memset(s, 0, (size_t)n * sizeof *s);
    }
    if (a->bits[ch] & bm) { c[C_DROP_DUPLICATE]++; return DUPLICATE; }
    add_words(s, vals, n, wire_order);
    a->bits[ch] |= bm;
    a->retx_seen[ch] |= retx ? 1 : 0;
    c[C_ACCEPTED]++;
    c[C_CONTRIBUTIONS] += count;
    if (a->bits[ch] != a->all_bits) return ACCEPTED;
    if (outside_int32(s, n)) c[C_SUM_EXCEEDS_INT32]++;
    a->completed[ch] = r;
    a->epoch[ch] = a->call;
    c[C_COMPLETED]++;
    return COMPLETED;
}

/* Holds the aggregator's arrays, o[0..7] = completed i64[C], sum_round i64[C], bits u64[C],
 * retx_seen u8[C], sums i64[C, n], epoch u32[C], verdicts i8[>= k], counters
 * i64[N_COUNTERS], in ``v``; -1 with an error set where their sizes do not match. */
static int hold_agg(Views *v, PyObject **o, Py_ssize_t k, Agg *a, int8_t **verdicts,
                    const char *fn) {
    static const char *names[8] = {"completed", "sum_round", "bits", "retx_seen", "sums",
                                   "epoch", "verdicts", "counters"};
    int at = v->held;
    for (int j = 0; j < 8; j++)
        if (hold(v, o[j], 1, 0, names[j]) < 0) return -1;
    Py_buffer *b = v->b + at;
    Py_ssize_t n_chunks = b[0].len / 8;
    a->n = n_chunks ? b[4].len / 8 / n_chunks : 0;
    if (b[1].len != n_chunks * 8 || b[2].len != n_chunks * 8 || b[3].len != n_chunks ||
        b[4].len != n_chunks * a->n * 8 || b[5].len != n_chunks * 4 || b[6].len < k ||
        b[7].len != N_COUNTERS * 8) {
        PyErr_Format(PyExc_ValueError, "_batchio.%s: array sizes do not match", fn);
        return -1;
    }
    a->completed = b[0].buf;
    a->sum_round = b[1].buf;
    a->bits = b[2].buf;
    a->retx_seen = b[3].buf;
    a->sums = b[4].buf;
    a->epoch = b[5].buf;
    *verdicts = b[6].buf;
    a->c = b[7].buf;
    a->n_chunks = n_chunks;
    return 0;
}

/* aggregate(rounds u32[k], chunks u32[k], bitmaps u64[k], counts u16[k], retx u8[k],
 *           values i32[k, n], all_bits, call, skip_rounds, completed i64[C], sum_round i64[C],
 *           bits u64[C], retx_seen u8[C], sums i64[C, n], epoch u32[C],
 *           verdicts i8[k], counters i64[N_COUNTERS]) -> processed
 * Applies the accept rules to packets 0.. in order, from their fields; stops early (returns
 * i < k) where accept_grad() says STOP. */
static PyObject *py_aggregate(PyObject *self, PyObject *args) {
    PyObject *o[14];
    Agg a;
    if (!PyArg_ParseTuple(args, "OOOOOOKIpOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &a.all_bits, &a.call, &a.skip_rounds, &o[6], &o[7], &o[8], &o[9], &o[10], &o[11],
                          &o[12], &o[13]))
        return NULL;
    static const char *names[6] = {"rounds", "chunks", "bitmaps", "counts", "retx", "values"};
    Views v = {.held = 0};
    Py_buffer *b = v.b;
    Py_ssize_t i = 0;
    int8_t *verdict;
    for (int j = 0; j < 6; j++)
        if (hold(&v, o[j], 0, 0, names[j]) < 0) goto out;
    Py_ssize_t k = b[0].len / 4;
    if (hold_agg(&v, o + 6, k, &a, &verdict, "aggregate") < 0) goto out;
    if (b[1].len != k * 4 || b[2].len != k * 8 || b[3].len != k * 2 || b[4].len != k ||
        b[5].len != k * a.n * 4) {
        PyErr_SetString(PyExc_ValueError, "_batchio.aggregate: array sizes do not match");
        goto out;
    }
    const uint32_t *rounds = b[0].buf, *chunks = b[1].buf;
    const uint64_t *bitmaps = b[2].buf;
    const uint16_t *counts = b[3].buf;
    const uint8_t *retx = b[4].buf, *values = b[5].buf;
    for (; i < k; i++) {
        int vd = accept_grad(&a, chunks[i], rounds[i], bitmaps[i], counts[i], retx[i],
                        values + i * a.n * 4, 0);
        if (vd == STOP) break;
        verdict[i] = (int8_t)vd;
    }
out:
    release(&v);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(i);
}

#define HEADER_LEN 24
#define TYPE_GRAD 1
#define TYPE_RESULT 2
#define FLAG_RETX 0x01
#define FLAG_AGGREGATED 0x02

/* grads(rows, row_len, start, k, lens, job, all_bits, call, skip_rounds, completed, sum_round, bits,
 *       retx_seen, sums, epoch, verdicts i8[k], counters, chunks u32[k]) -> processed
 * The PS's usual batch without numpy: when every row of rows[start:k] is a GRAD of this
 * job, of its full length, with no flag but RETX (no switch aggregate, no OVERFLOW), the
 * accept rules run on them in arrival order straight from the wire format, verdicts[i] and
 * chunks[i] for each row processed (stopping where accept_grad() says STOP); otherwise nothing
 * is done and -1 returned, for the caller's general path.  Parsed into numpy fields,
 * masks and host-order copies first, a receive cost the PS a fixed ~128 us of numpy calls
 * (warm caches; several times that among fig1's 8 processes on 2 cores) plus the copies
 * per row, and under reordering a PS's receives come 40% more often. */
static PyObject *py_grads(PyObject *self, PyObject *args) {
    PyObject *o_rows, *o_lens, *o[9];
    Py_ssize_t row_len, start, k;
    unsigned int job;
    Agg a;
    if (!PyArg_ParseTuple(args, "OnnnOIKIpOOOOOOOOO", &o_rows, &row_len, &start, &k, &o_lens,
                          &job, &a.all_bits, &a.call, &a.skip_rounds, &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8]))
        return NULL;
    if (start < 0 || k < start || row_len <= HEADER_LEN || (row_len - HEADER_LEN) % 4) {
        PyErr_SetString(PyExc_ValueError, "_batchio.grads: 0 <= start <= k and row_len = "
                        "24 + 4 n");
        return NULL;
    }
    Views v = {.held = 0};
    Py_ssize_t i = start;
    int8_t *verdict;
    PyObject *result = NULL;
    if (hold(&v, o_rows, 0, k * row_len, "rows") < 0 || hold(&v, o_lens, 0, k * 4, "lens") < 0 ||
        hold_agg(&v, o, k - start, &a, &verdict, "grads") < 0 ||
        hold(&v, o[8], 1, (k - start) * 4, "chunks") < 0)
        goto out;
    if (a.n != (row_len - HEADER_LEN) / 4) {
        PyErr_SetString(PyExc_ValueError, "_batchio.grads: sums hold n = (row_len - 24) / 4 "
                        "values per chunk");
        goto out;
    }
    const uint8_t *rows = v.b[0].buf;
    const int32_t *lens = v.b[1].buf;
    uint32_t *chunks = v.b[10].buf;
    for (Py_ssize_t j = start; j < k; j++) {
        const uint8_t *r = rows + j * row_len;
        uint16_t job_be;
        memcpy(&job_be, r + 2, 2);
        if (lens[j] != row_len || r[0] != TYPE_GRAD || (r[1] & ~FLAG_RETX) ||
            ntohs(job_be) != job) {
            result = PyLong_FromLong(-1);
            goto out;
        }
    }
    for (; i < k; i++) {
        const uint8_t *r = rows + i * row_len;
        uint32_t round_be, chunk_be;
        uint16_t count_be;
        uint64_t bitmap_be;
        memcpy(&round_be, r + 4, 4);
        memcpy(&chunk_be, r + 8, 4);
        memcpy(&count_be, r + 14, 2);
        memcpy(&bitmap_be, r + 16, 8);
        uint32_t ch = ntohl(chunk_be);
        int vd = accept_grad(&a, ch, ntohl(round_be), be64toh(bitmap_be), ntohs(count_be),
                        r[1] & FLAG_RETX, r + HEADER_LEN, 1);
        if (vd == STOP) break;
        verdict[i - start] = (int8_t)vd;
        chunks[i - start] = ch;
    }
    result = PyLong_FromSsize_t(i - start);
out:
    release(&v);
    return result;
}

/* results(rows, row_len, k, lens, ips, ports, ps_ips u32[P], ps_ports u16[P], job, round, n,
 *         states, slow u8[k], stats f64[P, N_STATS]) -> rows left to the caller
 * The worker's side of aggregate(): rows 0..k-1 of a receive, in arrival order.  A row is
 * taken here when it is a RESULT of this job and round, of the right length, with no RETX
 * or unknown flag, from a PS (its exact address, else the first PS at its host: a switch's
 * copy keeps the PS's address), for a chunk of that PS's shard without a RESULT yet and never
 * resent: its payload goes to results[chunk] in host order, done[chunk] = 1, deadline[chunk]
 * = inf, and the PS's stats count it.  Every other row gets slow[i] = 1 for the transport to
 * handle (counted, resent, spurious, control, another job's).  ``states`` holds one tuple per
 * PS: (done u8[C], results i32[C, n], deadline f64[C], resends i32[C], sent_at f64[C],
 * at_start u8[C]).  stats[p] = (chunks completed, highest of them, least and greatest send
 * time of those sent before the round's first RESULT, least and greatest of the others),
 * the times +-inf where none. */
enum { S_COUNT, S_TOP, S_START_MIN, S_START_MAX, S_STEADY_MIN, S_STEADY_MAX, N_STATS };
enum { P_DONE, P_RESULTS, P_DEADLINE, P_RESENDS, P_SENT_AT, P_AT_START, N_PS_ARRAYS };
#define MAX_PS 64

typedef struct {
    uint8_t *done, *at_start;
    int32_t *results, *resends;
    double *deadline, *sent_at;
    Py_ssize_t chunks;
} PsState;

static PyObject *py_results(PyObject *self, PyObject *args) {
    PyObject *o[8], *states;
    Py_ssize_t row_len, k, n;
    unsigned int job, round_;
    if (!PyArg_ParseTuple(args, "OnnOOOOOIInO!OO", &o[0], &row_len, &k, &o[1], &o[2], &o[3],
                          &o[4], &o[5], &job, &round_, &n, &PyTuple_Type, &states, &o[6],
                          &o[7]))
        return NULL;
    Py_ssize_t n_ps = PyTuple_GET_SIZE(states);
    if (row_len != HEADER_LEN + 4 * n || k < 0 || n_ps > MAX_PS) {
        PyErr_Format(PyExc_ValueError, "_batchio.results: row_len = %d + 4 n, k >= 0 and at "
                     "most %d PSs", HEADER_LEN, MAX_PS);
        return NULL;
    }
    Views v = {.held = 0};
    Py_buffer ps_views[MAX_PS][N_PS_ARRAYS];
    Py_ssize_t ps_held = 0, slow_rows = 0;
    PsState ps[MAX_PS];
    if (hold(&v, o[0], 0, k * row_len, "rows") < 0 || hold(&v, o[1], 0, k * 4, "lens") < 0 ||
        hold(&v, o[2], 0, k * 4, "ips") < 0 || hold(&v, o[3], 0, k * 2, "ports") < 0 ||
        hold(&v, o[4], 0, n_ps * 4, "ps_ips") < 0 || hold(&v, o[5], 0, n_ps * 2, "ps_ports") < 0 ||
        hold(&v, o[6], 1, k, "slow") < 0 ||
        hold(&v, o[7], 1, n_ps * N_STATS * (Py_ssize_t)sizeof(double), "stats") < 0)
        goto out;
    static const int widths[N_PS_ARRAYS] = {1, 4, 8, 4, 8, 1};
    for (; ps_held < n_ps; ps_held++) {
        PyObject *t = PyTuple_GET_ITEM(states, ps_held);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != N_PS_ARRAYS) {
            PyErr_Format(PyExc_ValueError, "_batchio.results: states[%zd] is not a tuple of %d "
                         "arrays", ps_held, N_PS_ARRAYS);
            goto out;
        }
        Py_buffer *b = ps_views[ps_held];
        int j = 0;
        for (; j < N_PS_ARRAYS; j++)
            if (get_buf(PyTuple_GET_ITEM(t, j), &b[j], j != P_RESENDS && j != P_SENT_AT &&
                        j != P_AT_START, 0, "states") < 0)
                break;
        Py_ssize_t chunks = b[P_DONE].len;
        int sized = j == N_PS_ARRAYS && b[P_RESULTS].len == chunks * n * 4;
        for (int m = 2; sized && m < N_PS_ARRAYS; m++)
            sized = b[m].len == chunks * widths[m];
        if (j < N_PS_ARRAYS || !sized) {
            while (j) PyBuffer_Release(&b[--j]);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "_batchio.results: the arrays of states[%zd] "
                             "do not match one chunk count", ps_held);
            goto out;
        }
        ps[ps_held] = (PsState){.done = b[P_DONE].buf, .results = b[P_RESULTS].buf,
                                .deadline = b[P_DEADLINE].buf, .resends = b[P_RESENDS].buf,
                                .sent_at = b[P_SENT_AT].buf, .at_start = b[P_AT_START].buf,
                                .chunks = chunks};
    }
    const uint8_t *rows = v.b[0].buf;
    const int32_t *lens = v.b[1].buf;
    const uint32_t *ips = v.b[2].buf, *ps_ips = v.b[4].buf;
    const uint16_t *ports = v.b[3].buf, *ps_ports = v.b[5].buf;
    uint8_t *slow = v.b[6].buf;
    double *stats = v.b[7].buf;
    for (Py_ssize_t p = 0; p < n_ps; p++) {
        double *s = stats + p * N_STATS;
        s[S_COUNT] = 0;
        s[S_TOP] = -1;
        s[S_START_MIN] = s[S_STEADY_MIN] = INFINITY;
        s[S_START_MAX] = s[S_STEADY_MAX] = -INFINITY;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        const uint8_t *r = rows + i * row_len;
        uint16_t job_be;
        uint32_t round_be, chunk_be;
        memcpy(&job_be, r + 2, 2);
        memcpy(&round_be, r + 4, 4);
        memcpy(&chunk_be, r + 8, 4);
        Py_ssize_t p = -1;
        if (lens[i] == row_len && r[0] == TYPE_RESULT && (r[1] & ~FLAG_AGGREGATED) == 0 &&
            ntohs(job_be) == job && ntohl(round_be) == round_) {
            for (Py_ssize_t q = 0; q < n_ps && p < 0; q++)
                if (ips[i] == ps_ips[q] && ports[i] == ps_ports[q]) p = q;
            for (Py_ssize_t q = 0; q < n_ps && p < 0; q++)
                if (ips[i] == ps_ips[q]) p = q;
        }
        uint32_t ch = ntohl(chunk_be);
        if (p < 0 || ch >= ps[p].chunks || ps[p].done[ch] || ps[p].resends[ch]) {
            slow[i] = 1;
            slow_rows++;
            continue;
        }
        slow[i] = 0;
        PsState *st = &ps[p];
        const uint8_t *payload = r + HEADER_LEN;
        swap_words((uint8_t *)(st->results + (Py_ssize_t)ch * n), payload, n);
        st->done[ch] = 1;
        st->deadline[ch] = INFINITY;
        double *s = stats + p * N_STATS, t = st->sent_at[ch];
        int lo = st->at_start[ch] ? S_START_MIN : S_STEADY_MIN;
        s[S_COUNT] += 1;
        if (ch > s[S_TOP]) s[S_TOP] = ch;
        if (t < s[lo]) s[lo] = t;
        if (t > s[lo + 1]) s[lo + 1] = t;
    }
out:
    while (ps_held) {
        ps_held--;
        for (int j = 0; j < N_PS_ARRAYS; j++) PyBuffer_Release(&ps_views[ps_held][j]);
    }
    release(&v);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(slow_rows);
}

/* pass_over(done u8[C], passed_at f64[C], low, top, now) -> (low, marked)
 * After chunks up to ``top`` completed: ``low`` moved past the done chunks at its front (the
 * lowest chunk still waiting), and every chunk in [low, top) still waiting and not passed
 * before gets passed_at = now; ``marked`` counts those.  One pass in C: under reordering a
 * held chunk keeps ``low`` back, and this range is a thousand chunks at each receive. */
static PyObject *py_pass_over(PyObject *self, PyObject *args) {
    PyObject *o_done, *o_passed;
    Py_ssize_t low, top, marked = 0;
    double now;
    if (!PyArg_ParseTuple(args, "OOnnd", &o_done, &o_passed, &low, &top, &now)) return NULL;
    Views v = {.held = 0};
    if (hold(&v, o_done, 0, 0, "done") < 0) return NULL;
    Py_ssize_t chunks = v.b[0].len;
    if (hold(&v, o_passed, 1, chunks * (Py_ssize_t)sizeof(double), "passed_at") < 0) goto out;
    if (low < 0 || top > chunks) {
        PyErr_Format(PyExc_ValueError, "_batchio.pass_over: expected 0 <= low and top <= %zd "
                     "chunks", chunks);
        goto out;
    }
    const uint8_t *done = v.b[0].buf;
    double *passed = v.b[1].buf;
    while (low < chunks && done[low]) low++;
    for (Py_ssize_t i = low; i < top; i++)
        if (!done[i] && passed[i] == INFINITY) {
            passed[i] = now;
            marked++;
        }
out:
    release(&v);
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("nn", low, marked);
}

/* fill(rows, row_len, chunks, src, kind, first, count, exp) -> None
 * The payloads of rows[0, chunks): src's values [first, first + count) as big-endian int32,
 * n = (row_len - 24) / 4 to a row, zeros past ``count``.  kind 0: src is int32, copied; kind
 * 1: src is float32 and each value x goes as rint(x * 2**exp), the scaling exact in double:
 * the quantization host_stack/ddp/allreduce.py documents, without numpy's temporary arrays
 * (three of the vector's size, which cost a 25 MB all-reduce more than its sends).  The
 * caller chooses exp so that every value fits int32.  Runs without the GIL. */
static PyObject *py_fill(PyObject *self, PyObject *args) {
    PyObject *o_rows, *o_src;
    Py_ssize_t row_len, chunks, first, count;
    int kind, exp;
    if (!PyArg_ParseTuple(args, "OnnOinni", &o_rows, &row_len, &chunks, &o_src, &kind, &first,
                          &count, &exp))
        return NULL;
    Py_ssize_t n = (row_len - HEADER_LEN) / 4;
    if (row_len <= HEADER_LEN || (row_len - HEADER_LEN) % 4 || chunks < 0 || first < 0 ||
        count < 0 || count > chunks * n || (kind != 0 && kind != 1)) {
        PyErr_SetString(PyExc_ValueError, "_batchio.fill: row_len = 24 + 4 n, 0 <= count <= "
                        "chunks n, first >= 0 and kind 0 (int32) or 1 (float32)");
        return NULL;
    }
    Views v = {.held = 0};
    if (hold(&v, o_rows, 1, chunks * row_len, "rows") < 0 ||
        hold(&v, o_src, 0, count ? (first + count) * 4 : 0, "src") < 0)
        goto out;
    uint8_t *rows = v.b[0].buf;
    const int32_t *ints = (const int32_t *)v.b[1].buf + first;
    const float *floats = (const float *)v.b[1].buf + first;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t c = 0; c < chunks; c++) {
        uint8_t *out = rows + c * row_len + HEADER_LEN;
        Py_ssize_t a = c * n, m = count - a < n ? (count - a > 0 ? count - a : 0) : n;
        if (kind == 0)
            swap_words(out, (const uint8_t *)(ints + a), m);
        else
            quantize(out, floats + a, m, exp);
        if (m < n) memset(out + 4 * m, 0, (size_t)(n - m) * 4);
    }
    Py_END_ALLOW_THREADS
out:
    release(&v);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* absmax(src f32[m]) -> float
 * The largest |x| of a float32 vector, inf when it holds inf or NaN: the value a float
 * all-reduce's scale is agreed on (host_stack/ddp/allreduce.py).  Runs without the GIL. */
static PyObject *py_absmax(PyObject *self, PyObject *args) {
    PyObject *o_src;
    if (!PyArg_ParseTuple(args, "O", &o_src)) return NULL;
    Views v = {.held = 0};
    if (hold(&v, o_src, 0, 0, "src") < 0) return NULL;
    uint32_t top;
    Py_ssize_t m = v.b[0].len / 4;
    const uint8_t *src = v.b[0].buf;
    Py_BEGIN_ALLOW_THREADS
    top = abs_bits_max(src, m);
    Py_END_ALLOW_THREADS
    release(&v);
    if (top >= 0x7f800000u) return PyFloat_FromDouble(INFINITY);
    float f;
    memcpy(&f, &top, 4);
    return PyFloat_FromDouble(f);
}

/* dequantize(src i32[>= m], out f32[m], exp) -> None
 * out[j] = src[j] * 2**exp rounded once to float32 (exact in double first): the sums of a
 * float all-reduce back in its dtype, in one pass without numpy's float64 temporaries.
 * Runs without the GIL. */
static PyObject *py_dequantize(PyObject *self, PyObject *args) {
    PyObject *o_src, *o_out;
    int exp;
    if (!PyArg_ParseTuple(args, "OOi", &o_src, &o_out, &exp)) return NULL;
    Views v = {.held = 0};
    if (hold(&v, o_out, 1, 0, "out") < 0 || hold(&v, o_src, 0, v.b[0].len, "src") < 0)
        goto out;
    float *dst = v.b[0].buf;
    const int32_t *src = v.b[1].buf;
    Py_ssize_t m = v.b[0].len / 4;
    double scale = ldexp(1.0, exp);
    Py_BEGIN_ALLOW_THREADS
    int_to_float(dst, src, m, scale);
    Py_END_ALLOW_THREADS
out:
    release(&v);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"send", py_send, METH_VARARGS, "sendmmsg rows[idx] to (ips, ports); (done, errors, errno)"},
    {"recv", py_recv, METH_VARARGS, "recvmmsg into rows of buf; datagrams received"},
    {"aggregate", py_aggregate, METH_VARARGS, "PS accept rules over a batch of GRAD packets"},
    {"grads", py_grads, METH_VARARGS, "PS accept rules over a receive of usual GRAD rows"},
    {"reorder", py_reorder, METH_VARARGS, "hold arrivals back, deliver the held ones due"},
    {"results", py_results, METH_VARARGS, "a worker's usual RESULTs into its PS states"},
    {"pass_over", py_pass_over, METH_VARARGS, "mark waiting chunks below a completed one"},
    {"fill", py_fill, METH_VARARGS, "GRAD payloads from int32 or quantized float32 values"},
    {"absmax", py_absmax, METH_VARARGS, "largest |x| of a float32 vector, inf if non-finite"},
    {"dequantize", py_dequantize, METH_VARARGS, "int32 sums times 2**exp into float32"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_batchio", .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC PyInit__batchio(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
#ifdef HAVE_AVX2_KERNELS
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2");
#endif
    if (PyModule_AddIntConstant(m, "MAX_VLEN", MAX_VLEN) < 0 ||
        PyModule_AddIntConstant(m, "N_REORDER_STATE", N_STATE) < 0 ||
        PyModule_AddIntConstant(m, "N_COUNTERS", N_COUNTERS) < 0 ||
        PyModule_AddIntConstant(m, "N_RESULT_STATS", N_STATS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
