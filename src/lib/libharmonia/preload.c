/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * preload.c — libharmonia-preload.so: the interposer (doc/interposer.md).
 *
 * Loaded with LD_PRELOAD into every process of a job, it wraps the POSIX and
 * stdio I/O calls, counts the bytes that go to the paths that matter (the job's
 * buffer directory $HARMONIA_BB and the site's prefixes $HARMONIA_INTERPOSE_PATHS),
 * finds the I/O phases with the detector (phasedet.c), asks bbmgrd for each as
 * harmonia_phase_begin() does, and paces the phase at its grant.
 *
 * Threads and locks.  The wrappers never talk to bbmgrd and never allocate: a
 * process's agent thread owns the libharmonia handle and does every request
 * (begin, end, the grant's refresh, the hints).  A call that continues an open,
 * granted phase takes no lock (its thread's slot, below); any other counted call
 * takes 'mu' for a few instructions (the detector, the bucket) and, for the call
 * that opens a phase, waits on 'cv' (bounded) until the agent has the grant.  The thread-local 'tl_in'
 * is set while a thread runs the interposer's own code and in the agent: a call
 * made then (libharmonia's own files and sockets, curl, a signal handler that
 * interrupted a wrapper) goes straight to the C library, so nothing recurses and
 * nothing waits on a lock its own thread holds.  The agent has a descriptor
 * table of its own (agent_own_fds) and every signal blocked: the program's
 * descriptors and signals stay the program's, and its calls keep the kernel's
 * single-threaded descriptor path.  Times are read from a coarse clock (mono).
 *
 * What the application sees is never changed: every wrapper returns what the C
 * library returned, with its errno (the interposer's own work saves and restores
 * errno), and no buffer is touched.
 *
 * Which descriptors matter: fdstate[] says per descriptor unknown/ignored/tracked;
 * an unknown one is classified at its first data call from /proc/self/fd (so dup,
 * descriptors inherited across exec and files opened by the C library itself are
 * seen as they are); open, dup2, close, fopen and fclose reset the state.
 */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "harmonia/harmonia.h"
#include "hmi.h"
#include "pace.h"
#include "phasedet.h"

#define EXPORT __attribute__((visibility("default")))

#define FDMAX 65536
#define MAXPREFIX 16
#define TICK 0.01 /* the agent's poll period inside a phase, s */
#define DEFAULT_VOLUME (1024.0 * 1024 * 1024)

enum { FD_UNKNOWN = 0, FD_IGNORED = 1, FD_TRACKED = 2 };
enum { G_IDLE, G_ASKING, G_OPEN };

static __thread int tl_in __attribute__((tls_model("initial-exec")));

static struct {
    bool on; /* interposing in this process */
    int nprefix;
    char prefix[MAXPREFIX][PATH_MAX];
    size_t plen[MAXPREFIX];
    double wait_bound;  /* longest wait of a wrapper for the grant, s */
    double volume;      /* first phase's volume when nothing is known */
    char log[PATH_MAX]; /* HARMONIA_INTERPOSE_LOG, or "" */
} conf;

static unsigned char fdstate[FDMAX];

/* The process's phase (mu). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static hm_pd_t pd;
static int inflight;
static int gstate = G_IDLE;
static harmonia_dir_t gdir;
static bool end_queued; /* a phase closed by a wrapper, for the agent */
static hm_pd_phase_t end_ph;
static double phase_bytes; /* this process's bytes in the open phase */
static hm_tb_t tb;
static bool agent_up, agent_stop;
static pid_t agent_pid;
static pid_t my_pid; /* getpid(), kept (a system call each time) */
static pthread_t agent;
static uint64_t nbegun;   /* phases begun at bbmgrd by this process */
static uint64_t last_pid; /* the bbmgrd phase this process was in last (agent) */

/*
 * The counted calls' fast path: no shared write per call.  While a phase is open
 * and granted, a thread whose call continues the phase (its own last call ended
 * less than the phase's longest pause ago, and less than the gap) counts into a
 * slot of its own (calls in flight, bytes, last end) and debits a share of the
 * bucket it took earlier ('credit'), without 'mu'.  The slots are folded into the
 * detector under 'mu' by every slow call and by the agent at each tick, before
 * anything is decided (a phase is closed only with no call in flight in any
 * slot).  'fast_gen' is non-zero while the fast path is allowed; it changes
 * whenever the phase, its grant or its rate changes, which voids every share
 * (shares are tokens already taken from the bucket: the pacing's bound holds).
 * A call that starts on the fast path publishes its slot's 'inflight', then a
 * fence, then reads 'fast_gen' again; whoever closes the phase zeroes
 * 'fast_gen', then a fence, then reads the slots: one of the two sees the other.
 * With membarrier(2) registered, the fast side's fence is the compiler's only and
 * the closing side's is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full
 * barrier on every running thread of the process (it cannot fail once
 * registered); without it (a seccomp filter, Linux before 4.14) both are full
 * fences.  A thread without a slot (more than NSLOT threads, or a pthread key
 * that would need memory) always takes the slow path, as a signal handler that
 * interrupts a fast call does.
 */
#define NSLOT 64
typedef struct {
    int inflight;    /* the owner's fast calls in flight */
    bool used;       /* (mu) */
    uint64_t bytes;  /* moved by fast calls, ever */
    double last_end; /* the owner's last fast call's end */
    uint64_t folded; /* (mu) bytes already folded */
} __attribute__((aligned(64))) slot_t;
static slot_t slots[NSLOT];
static uint32_t fast_gen;         /* 0: slow path only */
static uint32_t gen_next = 1;     /* (mu) */
static double pause_pub, gap_pub; /* pd.cur.pause and pd.gap for the fast path */
static pthread_key_t slot_key;
static bool slot_key_ok;
static __thread slot_t *tl_slot __attribute__((tls_model("initial-exec")));
static __thread bool tl_fast __attribute__((tls_model("initial-exec")));
static __thread bool tl_noslot __attribute__((tls_model("initial-exec")));
static __thread uint32_t tl_cgen __attribute__((tls_model("initial-exec")));
static __thread double tl_credit __attribute__((tls_model("initial-exec")));
static __thread double tl_last_end __attribute__((tls_model("initial-exec")));
/* the start of the thread's counted call in flight: its own duration counts
 * toward its pacing (a call that took as long as its bytes at the rate waits no
 * more) */
static __thread double tl_call_t0 __attribute__((tls_model("initial-exec")));
/* membarrier(2) registered: the fast path's fence is the kernel's, paid by the
 * rare side that stops the fast path, not by every call */
static bool use_membarrier;

/* ------------------------------------------------------------------ real calls */
#define REAL_DECL(ret, name, args) static ret(*real_##name) args;
#define REAL(name) \
    ((__typeof__(real_##name))(__atomic_load_n(&real_##name, __ATOMIC_RELAXED) \
                                   ? (void *)real_##name \
                                   : resolve((void **)&real_##name, #name)))

static void *resolve(void **slot, const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p)
        __atomic_store_n(slot, p, __ATOMIC_RELAXED);
    return p;
}

REAL_DECL(int, open, (const char *, int, ...))
REAL_DECL(int, open64, (const char *, int, ...))
REAL_DECL(int, openat, (int, const char *, int, ...))
REAL_DECL(int, openat64, (int, const char *, int, ...))
REAL_DECL(int, __open_2, (const char *, int))
REAL_DECL(int, __open64_2, (const char *, int))
REAL_DECL(int, __openat_2, (int, const char *, int))
REAL_DECL(int, __openat64_2, (int, const char *, int))
REAL_DECL(int, creat, (const char *, mode_t))
REAL_DECL(int, creat64, (const char *, mode_t))
REAL_DECL(ssize_t, read, (int, void *, size_t))
REAL_DECL(ssize_t, __read_chk, (int, void *, size_t, size_t))
REAL_DECL(ssize_t, pread, (int, void *, size_t, off_t))
REAL_DECL(ssize_t, pread64, (int, void *, size_t, off_t))
REAL_DECL(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t))
REAL_DECL(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t))
REAL_DECL(ssize_t, readv, (int, const struct iovec *, int))
REAL_DECL(ssize_t, preadv, (int, const struct iovec *, int, off_t))
REAL_DECL(ssize_t, preadv64, (int, const struct iovec *, int, off_t))
REAL_DECL(ssize_t, write, (int, const void *, size_t))
REAL_DECL(ssize_t, pwrite, (int, const void *, size_t, off_t))
REAL_DECL(ssize_t, pwrite64, (int, const void *, size_t, off_t))
REAL_DECL(ssize_t, writev, (int, const struct iovec *, int))
REAL_DECL(ssize_t, pwritev, (int, const struct iovec *, int, off_t))
REAL_DECL(ssize_t, pwritev64, (int, const struct iovec *, int, off_t))
REAL_DECL(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned))
REAL_DECL(int, fsync, (int))
REAL_DECL(int, fdatasync, (int))
REAL_DECL(int, close, (int))
REAL_DECL(int, dup2, (int, int))
REAL_DECL(int, dup3, (int, int, int))
REAL_DECL(FILE *, fopen, (const char *, const char *))
REAL_DECL(FILE *, fopen64, (const char *, const char *))
REAL_DECL(size_t, fread, (void *, size_t, size_t, FILE *))
REAL_DECL(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *))
REAL_DECL(size_t, fwrite, (const void *, size_t, size_t, FILE *))
REAL_DECL(int, fflush, (FILE *))
REAL_DECL(int, fclose, (FILE *))

/* ------------------------------------------------------------------ clock, sleep */
/* The clock of the detector and the pacing: CLOCK_MONOTONIC_COARSE when it ticks
 * at least every 4 ms (the kernel's tick: a read costs a few ns, against 20-40 ns
 * for CLOCK_MONOTONIC, twice per counted call), else CLOCK_MONOTONIC.  Phases
 * are told apart by gaps of 0.1 s or more and bbmgrd's grants are paced over
 * tens of ms: a few ms of resolution changes neither.  Chosen at start-up. */
static clockid_t mono_clock = CLOCK_MONOTONIC;

static void mono_choose(void)
{
    struct timespec r;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) == 0 && r.tv_sec == 0 && r.tv_nsec <= 4000000)
        mono_clock = CLOCK_MONOTONIC_COARSE;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(mono_clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    if (!(s > 0))
        return;
    struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Wait on cv (mu held) for at most s seconds (cv runs on CLOCK_MONOTONIC). */
static void cv_wait(double s)
{
    struct timespec ts;
    if (s > 1)
        s = 1;
    if (s < 0)
        s = 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)s;
    ts.tv_nsec += (long)((s - floor(s)) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&cv, &mu, &ts);
}

/* ------------------------------------------------------------------ paths */
static bool path_matters(const char *p)
{
    for (int i = 0; i < conf.nprefix; i++) {
        size_t n = conf.plen[i];
        if (!strncmp(p, conf.prefix[i], n) && (p[n] == '/' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* Classify fd from /proc/self/fd (a system call, no allocation). */
static int classify(int fd)
{
    char link[32] = "/proc/self/fd/", digits[12], target[PATH_MAX];
    int n = 0, k = (int)strlen(link);
    unsigned v = (unsigned)fd;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 11);
    while (n > 0)
        link[k++] = digits[--n];
    link[k] = '\0';
    ssize_t r = readlink(link, target, sizeof(target) - 1);
    int st = FD_IGNORED;
    if (r > 0) {
        target[r] = '\0';
        if (target[0] == '/' && path_matters(target))
            st = FD_TRACKED;
    } else if (r < 0 && errno == ENOENT)
        return FD_IGNORED; /* not open (EBADF comes from the real call) */
    __atomic_store_n(&fdstate[fd], (unsigned char)st, __ATOMIC_RELAXED);
    return st;
}

static inline bool tracked(int fd)
{
    if (!conf.on || tl_in || fd < 0 || fd >= FDMAX)
        return false;
    int st = __atomic_load_n(&fdstate[fd], __ATOMIC_RELAXED);
    if (st == FD_UNKNOWN) {
        int e = errno;
        st = classify(fd);
        errno = e;
    }
    return st == FD_TRACKED;
}

/* Counted, as far as is known already (no classification: close and fclose
 * of a descriptor never used for data cost no readlink). */
static inline bool tracked_known(int fd)
{
    return conf.on && !tl_in && fd >= 0 && fd < FDMAX
           && __atomic_load_n(&fdstate[fd], __ATOMIC_RELAXED) == FD_TRACKED;
}

static inline void fd_reset(int fd)
{
    if (fd >= 0 && fd < FDMAX)
        __atomic_store_n(&fdstate[fd], FD_UNKNOWN, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ the fast path */
static inline void store_d(double *p, double v)
{
    __atomic_store(p, &v, __ATOMIC_RELAXED);
}

static inline double load_d(double *p)
{
    double v;
    __atomic_load(p, &v, __ATOMIC_RELAXED);
    return v;
}

/* Fold every slot into the detector (mu held); returns the calls in flight on
 * the fast path.  The fast path may go on meanwhile: what a slot holds only grows. */
static int fold(void)
{
    int n = 0;
    for (int i = 0; i < NSLOT; i++) {
        slot_t *s = &slots[i];
        if (!s->used)
            continue;
        n += __atomic_load_n(&s->inflight, __ATOMIC_ACQUIRE);
        uint64_t b = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
        double le = load_d(&s->last_end);
        if (b != s->folded) {
            double d = (double)(b - s->folded);
            s->folded = b;
            phase_bytes += d;
            hm_pd_done(&pd, le, d);
        } else if (le > pd.last_end)
            hm_pd_done(&pd, le, 0);
    }
    return n;
}

/* Stop the fast path, then fold (mu held): no fast call starts until
 * fast_publish(), and the ones in flight are counted. */
static int fast_stop_fold(void)
{
    if (__atomic_load_n(&fast_gen, __ATOMIC_RELAXED) == 0)
        return fold(); /* stopped already, with its fence */
    __atomic_store_n(&fast_gen, 0, __ATOMIC_RELAXED);
    if (!(use_membarrier && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0))
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return fold();
}

/* Register for membarrier(2) (at start and in a forked child; mu held or one thread). */
static void membarrier_setup(void)
{
    use_membarrier = false;
#ifdef SYS_membarrier
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        && syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        use_membarrier = true;
#endif
}

/* Before a decision that may close the phase or open one (mu held): the calls
 * in flight, the fast path stopped when the decision may be taken. */
static int fold_for(double now)
{
    int n = fold();
    if (!pd.open || (inflight + n == 0 && now - pd.last_end >= pd.gap))
        n = fast_stop_fold();
    return n;
}

/* The fast path allowed while the phase is open and granted (mu held); a new
 * generation only when it was stopped. */
static void fast_publish(void)
{
    if (!(gstate == G_OPEN && pd.open && conf.on && !end_queued)) {
        __atomic_store_n(&fast_gen, 0, __ATOMIC_RELAXED);
        return;
    }
    if (load_d(&pause_pub) != pd.cur.pause)
        store_d(&pause_pub, pd.cur.pause);
    if (load_d(&gap_pub) != pd.gap)
        store_d(&gap_pub, pd.gap);
    if (__atomic_load_n(&fast_gen, __ATOMIC_RELAXED) != 0)
        return;
    uint32_t g = gen_next++;
    if (g == 0)
        g = gen_next++;
    __atomic_store_n(&fast_gen, g, __ATOMIC_RELEASE);
}

/* A slot for this thread (mu held), or NULL. */
static slot_t *slot_get(void)
{
    if (tl_slot || tl_noslot)
        return tl_slot;
    tl_noslot = true;
    /* pthread_setspecific() needs no memory for the first 32 keys only (glibc):
     * a wrapper never allocates */
    if (!slot_key_ok || (unsigned long)slot_key >= 32)
        return NULL;
    for (int i = 0; i < NSLOT; i++)
        if (!slots[i].used) {
            slot_t *s = &slots[i];
            s->used = true;
            s->inflight = 0;
            s->bytes = s->folded = 0;
            s->last_end = 0;
            if (pthread_setspecific(slot_key, s) != 0) {
                s->used = false;
                return NULL;
            }
            tl_slot = s;
            tl_noslot = false;
            tl_cgen = 0;
            tl_last_end = 0;
            return s;
        }
    return NULL;
}

/* The thread exits: its slot is folded and freed. */
static void slot_release(void *v)
{
    slot_t *s = v;
    int e = errno;
    tl_in = 1;
    pthread_mutex_lock(&mu);
    if (s >= slots && s < slots + NSLOT && s->used) {
        fold();
        s->used = false;
    }
    pthread_mutex_unlock(&mu);
    tl_slot = NULL;
    tl_noslot = true;
    tl_in = 0;
    errno = e;
}

/* The wait d > 0 of a call's bytes at the granted rate r0 > 0 (the call in
 * flight, mu not held), in slices: a change of the grant meanwhile (the agent refreshes it every
 * second) rescales what is left, so that one large call (HDF5 writes a dataset
 * with one pwrite()) follows its grant as a stream of small calls does; the
 * phase unpaced or over, the wait ends. */
#define PACE_SLICE 0.1
static void pace_wait(double d, double r0)
{
    while (d > 0) {
        double s = d < PACE_SLICE ? d : PACE_SLICE;
        sleep_s(s);
        d -= s;
        if (!(d > 0))
            break;
        pthread_mutex_lock(&mu);
        double r = gstate == G_OPEN ? tb.rate : 0;
        pthread_mutex_unlock(&mu);
        if (!(r > 0))
            break;
        if (r != r0) {
            d *= r0 / r;
            r0 = r;
        }
    }
}

/* After a counted call's bucket debit (mu held, no wait due): a share of the
 * bucket for this thread's next calls. */
static void credit_take(void)
{
    uint32_t g = __atomic_load_n(&fast_gen, __ATOMIC_RELAXED);
    if (!tl_slot || g == 0)
        return;
    tl_cgen = g;
    if (tb.rate <= 0) {
        tl_credit = INFINITY;
        return;
    }
    double chunk = tb.burst / 16;
    if (tb.tokens >= chunk) {
        tb.tokens -= chunk;
        tl_credit = chunk;
    } else
        tl_credit = 0;
}

enum { C_NO = 0, C_SLOW = 1, C_FAST = 2 };

/*
 * The wait of a call that moved n bytes and ends at now (mu held): its bytes are
 * taken from the bucket at the call's start, and the time the call took counts
 * toward the wait.  Taken at its end, a 16 MiB write that took 0.2 s at a
 * 50 MB/s share found the bucket full at its 50 ms burst and waited 0.28 s more:
 * 0.48 s a call, 35 MB/s, however long the grant; MPI-IO and HDF5 move a phase
 * in such calls.
 */
static double paced_take(double n, double now)
{
    double t0 = tl_call_t0;
    if (!(t0 > 0 && t0 <= now))
        t0 = now;
    double d = hm_tb_take(&tb, n, t0) - (now - t0);
    return d > 0 ? d : 0;
}

/* The call continues the open phase: counted in the thread's slot, no lock. */
static inline int fast_start(void)
{
    slot_t *s = tl_slot;
    if (!s || tl_fast)
        return C_NO;
    uint32_t g = __atomic_load_n(&fast_gen, __ATOMIC_ACQUIRE);
    if (g == 0)
        return C_NO;
    double t = mono(), d = t - tl_last_end;
    if (!(d >= 0 && d <= load_d(&pause_pub) && d < load_d(&gap_pub)))
        return C_NO;
    tl_call_t0 = t;
    tl_fast = true;
    __atomic_store_n(&s->inflight, 1, __ATOMIC_RELAXED);
    if (use_membarrier)
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&fast_gen, __ATOMIC_RELAXED) == g)
        return C_FAST;
    __atomic_store_n(&s->inflight, 0, __ATOMIC_RELAXED);
    tl_fast = false;
    return C_NO;
}

static void fast_done(ssize_t moved)
{
    slot_t *s = tl_slot;
    int e = errno;
    double now;
    if (moved > 0) {
        uint32_t g = __atomic_load_n(&fast_gen, __ATOMIC_RELAXED);
        if (g != 0 && g == tl_cgen && tl_credit >= (double)moved) {
            tl_credit -= (double)moved;
        } else {
            /* the share is spent or void: the bucket itself, under mu */
            double d = 0, r0 = 0;
            tl_in = 1;
            pthread_mutex_lock(&mu);
            if (gstate == G_OPEN) {
                d = paced_take((double)moved, mono());
                r0 = tb.rate;
            }
            tl_credit = 0;
            if (d <= 0)
                credit_take();
            pthread_mutex_unlock(&mu);
            pace_wait(d, r0); /* the call is in flight: the phase stays open */
            tl_in = 0;
        }
        __atomic_store_n(&s->bytes, s->bytes + (uint64_t)moved, __ATOMIC_RELAXED);
    }
    now = mono();
    tl_last_end = now;
    store_d(&s->last_end, now);
    __atomic_store_n(&s->inflight, 0, __ATOMIC_RELEASE);
    tl_fast = false;
    errno = e;
}

/* ------------------------------------------------------------------ the agent */
static harmonia_t *hh;
static const hmi_api_t *api; /* the agent module's, once opened */

static const char *dir_name(harmonia_dir_t d)
{
    return d == HARMONIA_READ ? "read" : d == HARMONIA_READWRITE ? "readwrite" : "write";
}
static char learn_path[PATH_MAX];

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    if (!conf.log[0])
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0) {
        /* opened for each line: a descriptor kept open could be closed by the
         * program and its number reused for one of the program's files */
        int fd = open(conf.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            (void)!write(fd, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
            close(fd);
        }
    }
}

/* The job's history file, locked (agent thread only; -1 when none). */
static int learn_open(void)
{
    if (!learn_path[0])
        return -1;
    int fd = open(learn_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

static bool learn_read(int fd, hm_pd_hist_t *h)
{
    return pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && hm_pd_hist_valid(h);
}

/* Adopt what the job's other processes learned (mu held by the caller? no:
 * called without mu; takes it). */
static void learn_load(void)
{
    hm_pd_hist_t h;
    int fd = learn_open();
    if (fd < 0)
        return;
    bool ok = learn_read(fd, &h);
    close(fd);
    if (ok) {
        pthread_mutex_lock(&mu);
        hm_pd_set_hist(&pd, &h);
        pthread_mutex_unlock(&mu);
    }
}

/* Record a closed phase in the job's history and adopt the merged history. */
static void learn_record(const hm_pd_phase_t *ph, double gap)
{
    hm_pd_hist_t h;
    int fd = learn_open();
    if (fd < 0)
        return;
    if (!learn_read(fd, &h))
        h = (hm_pd_hist_t){ .magic = HM_PD_MAGIC, .size = sizeof(h) };
    hm_pd_record(&h, ph, gap);
    if (pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
        pthread_mutex_lock(&mu);
        hm_pd_set_hist(&pd, &h);
        pthread_mutex_unlock(&mu);
    }
    close(fd);
}

/* End the phase at bbmgrd with this process's bytes (agent, without mu). */
static void agent_end(const hm_pd_phase_t *ph, double bytes, double gap)
{
    api->end(hh, (uint64_t)bytes);
    learn_record(ph, gap);
    pthread_mutex_lock(&mu);
    logf_("end %.6f %.6f %.0f w_iter %.3f volume %.0f gap %.3f\n", ph->start, ph->end, ph->bytes,
          hm_pd_w_iter(&pd), hm_pd_volume(&pd), pd.gap);
    pthread_mutex_unlock(&mu);
}

/*
 * The agent's own descriptor table (unshare(CLONE_FILES)), emptied but for
 * stderr (libharmonia's messages), with /dev/null on 0 and 1 so that no socket
 * of the agent ever gets a standard descriptor's number.  While two threads
 * share a table the kernel takes a reference and, for a file with a position,
 * its f_pos lock in every read and write of the program (fdget_pos): tens of ns
 * a call, a tenth of a small write from Python.  A table of its own gives the
 * program's calls back the single-threaded path, keeps the agent's sockets out
 * of reach of a program that closes every descriptor, and holds no reference to
 * the program's files (a pipe the program closes still reaches end of file).
 * Without close_range(2) (before Linux 5.9) the table stays shared.
 */
static void agent_own_fds(void)
{
#ifdef SYS_close_range
    /* first > last: EINVAL where close_range exists, ENOSYS where it does not */
    if (syscall(SYS_close_range, ~0U, 0U, 0U) != -1 || errno != EINVAL)
        return;
    if (unshare(CLONE_FILES) != 0)
        return;
    (void)syscall(SYS_close_range, 0U, 1U, 0U);
    (void)syscall(SYS_close_range, 3U, ~0U, 0U);
    for (int i = 0; i < 3; i++)
        if (fcntl(i, F_GETFD) < 0 && REAL(open)("/dev/null", O_RDWR) < 0)
            break;
#endif
}

static void *agent_main(void *arg)
{
    (void)arg;
    bool hints_asked = false;
    double last_refresh = 0;

    tl_in = 1;
    agent_own_fds();
    /* harmonia_init() reads the environment, allocates and may open descriptors:
     * here, in the agent's table, as every later call on the handle (the
     * handle of a forked child's parent is left, not freed: its state and
     * descriptors are the parent's) */
    bool ok = api->init(&hh) == 0 && api->mode(hh) != HARMONIA_MODE_OFF;
    pthread_mutex_lock(&mu);
    if (!ok) {
        conf.on = false; /* nothing counted from now on */
        gstate = G_IDLE; /* a wrapper waiting for a grant goes on */
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        if (hh)
            api->finalize(hh);
        hh = NULL;
        return NULL;
    }
    pthread_mutex_unlock(&mu);
    learn_load();
    pthread_mutex_lock(&mu);
    for (;;) {
        fast_publish();
        if (gstate == G_OPEN && !end_queued)
            cv_wait(TICK);
        else if (gstate != G_ASKING && !end_queued && !agent_stop)
            pthread_cond_wait(&cv, &mu);
        double now = mono();
        hm_pd_phase_t ph;
        bool ending = false;
        int fin = agent_stop ? fast_stop_fold() : fold_for(now);

        if (end_queued) {
            ph = end_ph;
            end_queued = false;
            ending = true;
        } else if (gstate == G_OPEN
                   && (hm_pd_poll(&pd, now, inflight + fin, &ph)
                       || (agent_stop && hm_pd_flush(&pd, &ph))))
            ending = true;
        else if (agent_stop && gstate == G_OPEN && !pd.open) {
            ph = (hm_pd_phase_t){ 0 };
            ending = true;
        }
        if (ending && gstate == G_OPEN) {
            double bytes = phase_bytes, gap = pd.gap;
            gstate = G_IDLE;
            phase_bytes = 0;
            hm_tb_set_rate(&tb, 0, 0, now);
            pthread_mutex_unlock(&mu);
            agent_end(&ph, bytes, gap);
            pthread_mutex_lock(&mu);
            pthread_cond_broadcast(&cv);
            continue;
        }
        if (gstate == G_ASKING) {
            double volume = hm_pd_volume(&pd);
            harmonia_dir_t dir = gdir;
            harmonia_grant_t g;
            /* the node's phase ended too soon (phasedet.h): the job's phase it
             * left, if still open, is rejoined rather than waited for */
            int rejoin = last_pid != 0 && api->begin_rejoin && hm_pd_may_rejoin(&pd);
            if (!(volume > 0))
                volume = conf.volume;
            pthread_mutex_unlock(&mu);
            if ((api->begin_rejoin ? api->begin_rejoin(hh, (uint64_t)volume, dir, &g, rejoin)
                                   : api->begin(hh, (uint64_t)volume, dir, &g))
                < 0)
                memset(&g, 0, sizeof(g));
            pthread_mutex_lock(&mu);
            now = mono();
            rejoin = rejoin && g.gated && g.phase_id == last_pid;
            if (rejoin)
                hm_pd_rejoin(&pd);
            last_pid = g.gated ? g.phase_id : 0;
            hm_tb_init(&tb, g.gated ? g.rate : 0, hm_tb_burst_for(g.rate), now);
            last_refresh = now;
            gstate = G_OPEN;
            nbegun++;
            logf_("begin %.6f volume %.0f %s gated %d rate %.0f wait %.3f rejoin %d\n",
                  pd.cur.start, volume, dir_name(dir), g.gated, g.rate, g.wait, rejoin);
            pthread_cond_broadcast(&cv);
            if (g.gated && !hints_asked) {
                /* the job's iohints, once, while the phase runs */
                double w = 0, v = 0;
                hints_asked = true;
                pthread_mutex_unlock(&mu);
                (void)api->hints(hh, &w, &v);
                pthread_mutex_lock(&mu);
                if (w > 0 || v > 0)
                    hm_pd_set_hints(&pd, w, v);
            }
            continue;
        }
        if (gstate == G_OPEN && now - last_refresh >= 1.0) {
            double moved = phase_bytes;
            last_refresh = now;
            pthread_mutex_unlock(&mu);
            double r = api->rate(hh, moved);
            pthread_mutex_lock(&mu);
            if (gstate == G_OPEN && r != tb.rate) {
                logf_("rate %.6f %.0f\n", now, r);
                hm_tb_set_rate(&tb, r, hm_tb_burst_for(r), mono());
            }
            continue;
        }
        if (agent_stop && gstate == G_IDLE && !end_queued)
            break;
    }
    pthread_mutex_unlock(&mu);
    /* the handle waits until bbmgrd has the last report (its descriptors are in
     * this thread's table) */
    api->finalize(hh);
    hh = NULL;
    return NULL;
}

/* The agent module, next to this library (dlopen: RTLD_LOCAL, so that nothing of
 * libharmonia or curl is seen by the program); NULL when it cannot be opened. */
static const hmi_api_t *agent_module(void)
{
    Dl_info info;
    char path[PATH_MAX];
    const char *slash;
    void *m;
    const hmi_api_t *(*get)(void);

    if (!dladdr((void *)agent_module, &info) || !info.dli_fname
        || !(slash = strrchr(info.dli_fname, '/'))
        || (size_t)(slash - info.dli_fname) + sizeof(HMI_AGENT_MODULE) + 1 > sizeof(path))
        return NULL;
    memcpy(path, info.dli_fname, (size_t)(slash - info.dli_fname) + 1);
    strcpy(path + (slash - info.dli_fname) + 1, HMI_AGENT_MODULE);
    if (!(m = dlopen(path, RTLD_LAZY | RTLD_LOCAL)))
        return NULL;
    if (!(get = (const hmi_api_t *(*)(void))dlsym(m, HMI_AGENT_SYMBOL)))
        return NULL;
    return get();
}

/* The first thing every thread the agent module starts does: its calls are the
 * interposer's own (its descriptors are in the agent's table). */
static void agent_thread_enter(void)
{
    tl_in = 1;
}

/* Start the agent of this process (mu held).  false: it cannot run. */
static bool agent_ready(void)
{
    pid_t me = my_pid;
    if (agent_up && agent_pid == me)
        return true;
    if (!api) {
        if (!(api = agent_module())) {
            conf.on = false;
            return false;
        }
        api->thread_hook(agent_thread_enter);
    }
    if (agent_up) {
        /* a forked child: the parent's agent and handle are not ours; the new
         * agent makes a fresh handle */
        hh = NULL;
        agent_up = false;
        gstate = G_IDLE;
        end_queued = false;
        phase_bytes = 0;
    }
    /* the agent starts with every signal blocked: a signal for the process is
     * the program's, and its handler (which may use the program's descriptors)
     * runs in one of the program's threads, never in the agent's table */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&agent, NULL, agent_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        conf.on = false;
        return false;
    }
    agent_up = true;
    agent_pid = me;
    return true;
}

/* ------------------------------------------------------------------ the wrappers' core */
/* A data call on a tracked descriptor starts: the detector sees it; the call that
 * opens a phase waits (bounded) for the grant.  'bytes' 0: a call that moves no
 * data (fsync, close) only extends an open phase. */
static int io_start(harmonia_dir_t dir, bool data)
{
    int c = fast_start();
    if (c)
        return c;
    int e = errno;
    int counted = C_NO;
    tl_in = 1;
    pthread_mutex_lock(&mu);
    if (!agent_ready())
        goto out;
    if (!data && !pd.open)
        goto out;
    double now = mono();
    int fin = fold_for(now);
    hm_pd_phase_t closed;
    if (!data && hm_pd_poll(&pd, now, inflight + fin, &closed)) {
        /* a call that moves no data never opens a phase, not even one that the
         * agent's next tick would have closed: it ends here (an MPI rank's
         * close() just after its synced phase ended opened a phase of 0 bytes
         * that bbmgrd granted) */
        end_ph = closed;
        end_queued = true;
        pthread_cond_broadcast(&cv);
        goto out;
    }
    slot_get();
    int f = hm_pd_start(&pd, now, inflight + fin, &closed);
    if (f & HM_PD_ENDED) {
        end_ph = closed;
        end_queued = true;
        pthread_cond_broadcast(&cv);
    }
    inflight++;
    counted = C_SLOW;
    if (f & HM_PD_BEGIN) {
        /* wait for the agent to end the previous phase at bbmgrd */
        double deadline = now + conf.wait_bound;
        while (gstate == G_OPEN && end_queued && mono() < deadline)
            cv_wait(deadline - mono());
        if (gstate == G_OPEN)
            gstate = G_IDLE; /* the agent did not answer: carry on */
        gdir = dir;
        gstate = G_ASKING;
        pthread_cond_broadcast(&cv);
    }
    if (gstate == G_ASKING) {
        double deadline = now + conf.wait_bound;
        while (gstate == G_ASKING && mono() < deadline)
            cv_wait(deadline - mono());
    }
    tl_call_t0 = mono(); /* the call itself starts now */
out:
    fast_publish();
    pthread_mutex_unlock(&mu);
    tl_in = 0;
    errno = e;
    return counted;
}

/* The call moved 'moved' bytes (< 0: failed): count them, pace, and end the call. */
static void io_done(int counted, ssize_t moved)
{
    if (counted == C_FAST) {
        fast_done(moved);
        return;
    }
    if (!counted)
        return;
    int e = errno;
    double d = 0, r0 = 0, now;
    tl_in = 1;
    pthread_mutex_lock(&mu);
    now = mono();
    if (moved > 0) {
        phase_bytes += (double)moved;
        if (gstate == G_OPEN) {
            d = paced_take((double)moved, now);
            r0 = tb.rate;
        }
    }
    if (d > 0) {
        pthread_mutex_unlock(&mu);
        pace_wait(d, r0); /* the phase stays open: the call is in flight */
        pthread_mutex_lock(&mu);
        now = mono();
    }
    hm_pd_done(&pd, now, moved > 0 ? (double)moved : 0);
    inflight--;
    if (tl_slot && pd.open) {
        tl_last_end = now;
        tl_credit = 0;
        if (d <= 0)
            credit_take();
    }
    pthread_mutex_unlock(&mu);
    tl_in = 0;
    errno = e;
}

#define WRAP_IO(fd, dir, call) \
    do { \
        if (!tracked(fd)) \
            return call; \
        int c_ = io_start(dir, true); \
        ssize_t r_ = (ssize_t)(call); \
        io_done(c_, r_); \
        return r_; \
    } while (0)

/* ------------------------------------------------------------------ open family */
static mode_t mode_arg(int flags, va_list ap)
{
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
        return (mode_t)va_arg(ap, int);
    return 0;
}

static int opened(int fd)
{
    if (fd >= 0)
        fd_reset(fd);
    return fd;
}

#define WRAP_OPEN(name) \
    EXPORT int name(const char *path, int flags, ...) \
    { \
        va_list ap; \
        va_start(ap, flags); \
        mode_t m = mode_arg(flags, ap); \
        va_end(ap); \
        return opened(REAL(name)(path, flags, m)); \
    }
WRAP_OPEN(open)
WRAP_OPEN(open64)

#define WRAP_OPENAT(name) \
    EXPORT int name(int dirfd, const char *path, int flags, ...) \
    { \
        va_list ap; \
        va_start(ap, flags); \
        mode_t m = mode_arg(flags, ap); \
        va_end(ap); \
        return opened(REAL(name)(dirfd, path, flags, m)); \
    }
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
EXPORT int __open_2(const char *path, int flags)
{
    return opened(REAL(__open_2)(path, flags));
}
EXPORT int __open64_2(const char *path, int flags)
{
    return opened(REAL(__open64_2)(path, flags));
}
EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat_2)(dirfd, path, flags));
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat64_2)(dirfd, path, flags));
}
EXPORT int creat(const char *path, mode_t mode)
{
    return opened(REAL(creat)(path, mode));
}
EXPORT int creat64(const char *path, mode_t mode)
{
    return opened(REAL(creat64)(path, mode));
}

EXPORT int dup2(int oldfd, int newfd)
{
    int r = REAL(dup2)(oldfd, newfd);
    if (r >= 0)
        fd_reset(r);
    return r;
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
    int r = REAL(dup3)(oldfd, newfd, flags);
    if (r >= 0)
        fd_reset(r);
    return r;
}

/* ------------------------------------------------------------------ data calls */
EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(read)(fd, buf, n));
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(__read_chk)(fd, buf, n, buflen));
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(pread)(fd, buf, n, off));
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(pread64)(fd, buf, n, off));
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(__pread_chk)(fd, buf, n, off, buflen));
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(__pread64_chk)(fd, buf, n, off, buflen));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(readv)(fd, iov, cnt));
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(preadv)(fd, iov, cnt, off));
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    WRAP_IO(fd, HARMONIA_READ, REAL(preadv64)(fd, iov, cnt, off));
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(write)(fd, buf, n));
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(pwrite)(fd, buf, n, off));
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(pwrite64)(fd, buf, n, off));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(writev)(fd, iov, cnt));
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(pwritev)(fd, iov, cnt, off));
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    WRAP_IO(fd, HARMONIA_WRITE, REAL(pwritev64)(fd, iov, cnt, off));
}

EXPORT ssize_t copy_file_range(int in, off_t *offin, int out, off_t *offout, size_t n,
                               unsigned flags)
{
    bool tout = tracked(out), tin = tracked(in);
    if (!tout && !tin)
        return REAL(copy_file_range)(in, offin, out, offout, n, flags);
    int c = io_start(tout ? HARMONIA_WRITE : HARMONIA_READ, true);
    ssize_t r = REAL(copy_file_range)(in, offin, out, offout, n, flags);
    io_done(c, r);
    return r;
}

/* A sync of the phase's data succeeded: the phase may end sooner (hm_pd_sync()). */
static void io_synced(void)
{
    int e = errno;
    tl_in = 1;
    pthread_mutex_lock(&mu);
    if (pd.open && gstate == G_OPEN) {
        double now = mono();
        fold();
        hm_pd_sync(&pd, now);
        logf_("sync %.6f bytes %.0f gap %.3f\n", now, pd.cur.bytes, pd.gap);
        fast_publish();
    }
    pthread_mutex_unlock(&mu);
    tl_in = 0;
    errno = e;
}

/* fsync and close move no data of their own: they keep an open phase open
 * while they run (an fsync can take long), never open one. */
#define WRAP_SYNC(name) \
    EXPORT int name(int fd) \
    { \
        if (!tracked(fd)) \
            return REAL(name)(fd); \
        int c_ = io_start(HARMONIA_WRITE, false); \
        int r_ = REAL(name)(fd); \
        io_done(c_, 0); \
        if (c_ && r_ == 0) \
            io_synced(); \
        return r_; \
    }
WRAP_SYNC(fsync)
WRAP_SYNC(fdatasync)

EXPORT int close(int fd)
{
    if (!tracked_known(fd)) {
        fd_reset(fd);
        return REAL(close)(fd);
    }
    int c = io_start(HARMONIA_WRITE, false);
    int r = REAL(close)(fd);
    fd_reset(fd);
    io_done(c, 0);
    return r;
}

/* ------------------------------------------------------------------ stdio
 * The C library's stdio calls its own read/write/open/close inside (not through
 * these wrappers), so a stream is counted here, once. */
static FILE *fopened(FILE *fp)
{
    if (fp)
        fd_reset(fileno(fp));
    return fp;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
    return fopened(REAL(fopen)(path, mode));
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopened(REAL(fopen64)(path, mode));
}

static int sfd(FILE *fp)
{
    int e = errno;
    int fd = fp ? fileno(fp) : -1;
    errno = e;
    return fd;
}

EXPORT size_t fread(void *p, size_t size, size_t n, FILE *fp)
{
    if (!tracked(sfd(fp)))
        return REAL(fread)(p, size, n, fp);
    int c = io_start(HARMONIA_READ, true);
    size_t r = REAL(fread)(p, size, n, fp);
    io_done(c, (ssize_t)(r * size));
    return r;
}

size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *fp);
EXPORT size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *fp)
{
    if (!tracked(sfd(fp)))
        return REAL(__fread_chk)(p, plen, size, n, fp);
    int c = io_start(HARMONIA_READ, true);
    size_t r = REAL(__fread_chk)(p, plen, size, n, fp);
    io_done(c, (ssize_t)(r * size));
    return r;
}

EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *fp)
{
    if (!tracked(sfd(fp)))
        return REAL(fwrite)(p, size, n, fp);
    int c = io_start(HARMONIA_WRITE, true);
    size_t r = REAL(fwrite)(p, size, n, fp);
    io_done(c, (ssize_t)(r * size));
    return r;
}

EXPORT int fflush(FILE *fp)
{
    if (!fp || !tracked_known(sfd(fp)))
        return REAL(fflush)(fp);
    int c = io_start(HARMONIA_WRITE, false);
    int r = REAL(fflush)(fp);
    io_done(c, 0);
    return r;
}

EXPORT int fclose(FILE *fp)
{
    int fd = sfd(fp);
    if (!tracked_known(fd)) {
        int r = REAL(fclose)(fp);
        fd_reset(fd);
        return r;
    }
    int c = io_start(HARMONIA_WRITE, false);
    int r = REAL(fclose)(fp);
    fd_reset(fd);
    io_done(c, 0);
    return r;
}


/* ------------------------------------------------------------------ set-up */
static bool env_yes(const char *name, bool dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    return !(!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off")
             || !strcasecmp(v, "false"));
}

static double env_num(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return dflt;
    double d = strtod(v, &end);
    return *end || !(d >= 0) || isinf(d) ? dflt : d;
}

static void add_prefix(const char *p, size_t n)
{
    char given[PATH_MAX], real[PATH_MAX];
    if (n == 0 || n >= sizeof(given) || p[0] != '/' || conf.nprefix >= MAXPREFIX)
        return;
    memcpy(given, p, n);
    given[n] = '\0';
    const char *use = realpath(given, real) ? real : given;
    size_t len = strlen(use);
    while (len > 1 && use[len - 1] == '/')
        len--;
    if (len <= 1)
        return; /* "/": every file; not a prefix that matters */
    memcpy(conf.prefix[conf.nprefix], use, len);
    conf.prefix[conf.nprefix][len] = '\0';
    conf.plen[conf.nprefix++] = len;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

/* The child has none of the parent's threads: its phase starts afresh (the
 * parent's phase is the parent's), with a new agent at its first tracked call. */
static void atfork_child(void)
{
    my_pid = getpid();
    pthread_mutex_init(&mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
    pd.open = 0;
    inflight = 0;
    gstate = G_IDLE;
    /* only this thread is left: its slot and every other are free */
    __atomic_store_n(&fast_gen, 0, __ATOMIC_RELAXED);
    memset(slots, 0, sizeof(slots));
    tl_slot = NULL;
    tl_noslot = false;
    tl_fast = false;
    tl_credit = 0;
    tl_cgen = 0;
    if (slot_key_ok)
        pthread_setspecific(slot_key, NULL);
    membarrier_setup();
    end_queued = false;
    agent_stop = false;
    phase_bytes = 0;
    last_pid = 0; /* the parent's phases are the parent's */
}

__attribute__((constructor)) static void preload_init(void)
{
    int e = errno;
    const char *v;
    tl_in = 1;

    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
    mono_choose();

    if (!getenv("HARMONIA_URL") || !*getenv("HARMONIA_URL") || !getenv("HARMONIA_JOBID")
        || !*getenv("HARMONIA_JOBID") || env_yes("HARMONIA_DISABLE", false)
        || !env_yes("HARMONIA_INTERPOSE", true))
        goto out;
    /* a program that calls libharmonia itself gates its own phases */
    if (dlsym(RTLD_DEFAULT, "harmonia_phase_begin"))
        goto out;
    if ((v = getenv("HARMONIA_BB")))
        add_prefix(v, strlen(v));
    if ((v = getenv("HARMONIA_INTERPOSE_PATHS"))) {
        for (const char *p = v; *p;) {
            const char *c = strchr(p, ':');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            add_prefix(p, n);
            p += n + (c != NULL);
        }
    }
    if (conf.nprefix == 0)
        goto out;

    hm_pd_params_t pp;
    hm_pd_params_default(&pp);
    double gap = env_num("HARMONIA_INTERPOSE_GAP", 0);
    if (gap > 0)
        pp.gap_init = pp.gap_min = pp.gap_max = gap;
    hm_pd_init(&pd, &pp);
    conf.volume = env_num("HARMONIA_INTERPOSE_VOLUME", DEFAULT_VOLUME);
    if (!(conf.volume >= 1))
        conf.volume = DEFAULT_VOLUME;
    conf.wait_bound = env_num("HARMONIA_MAX_WAIT", 600) + env_num("HARMONIA_FALLBACK_WAIT", 5) + 30;

    struct stat sb;
    const char *cdir = getenv("HARMONIA_COORD_DIR");
    if (!cdir || !*cdir)
        cdir = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    const char *job = getenv("HARMONIA_JOBID");
    bool job_ok = strlen(job) < 64;
    for (const char *p = job; *p; p++)
        if (*p == '/' || (p == job && *p == '.'))
            job_ok = false;
    const char *inc = hmi_job_start();
    if (job_ok
        && snprintf(learn_path, sizeof(learn_path), "%s/harmonia-%u-%s%s%s.learn", cdir,
                    (unsigned)getuid(), job, *inc ? "." : "", inc)
               >= (int)sizeof(learn_path))
        learn_path[0] = '\0';
    if ((v = getenv("HARMONIA_INTERPOSE_LOG")) && *v)
        snprintf(conf.log, sizeof(conf.log), "%s", v);
    my_pid = getpid();
    slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0;
    membarrier_setup();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    conf.on = true;
out:
    tl_in = 0;
    errno = e;
}

/* At exit: the agent ends an open phase with the bytes moved and stops; the
 * handle waits until bbmgrd has the report (libharmonia's bounds). */
__attribute__((destructor)) static void preload_fini(void)
{
    int e = errno;
    tl_in = 1;
    pthread_mutex_lock(&mu);
    bool mine = agent_up && agent_pid == getpid(); /* vfork()ed? checked for real */
    if (mine) {
        agent_stop = true;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    if (mine) {
        pthread_join(agent, NULL); /* it finalizes the handle */
        agent_up = false;
    }
    conf.on = false;
    errno = e;
}
