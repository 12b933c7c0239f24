/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of libharmonia's token bucket (pace.c, compiled in) and of the
 * application API when not under Harmonia (every call a no-op success).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "harmonia/harmonia.h"
#include "../../src/lib/libharmonia/pace.h"
#include "testutil.h"

START_TEST(test_tb_unlimited)
{
    hm_tb_t tb;
    hm_tb_init(&tb, 0, 0, 0);
    ck_assert(hm_tb_take(&tb, 1e12, 0) == 0);
    ck_assert(hm_tb_take(&tb, 1e12, 0.001) == 0);
    hm_tb_init(&tb, -5, 10, 0);
    ck_assert(hm_tb_take(&tb, 1e9, 1) == 0);
}
END_TEST

START_TEST(test_tb_hand_checked)
{
    hm_tb_t tb;
    /* 100 B/s, bucket of 10 B, full at t = 0 */
    hm_tb_init(&tb, 100, 10, 0);
    ck_assert(hm_tb_take(&tb, 10, 0) == 0); /* the burst */
    ck_assert(fabs(hm_tb_take(&tb, 10, 0) - 0.1) < 1e-12);
    /* the caller slept 0.1 s: the debt is paid, the next 10 B wait 0.1 s more */
    ck_assert(fabs(hm_tb_take(&tb, 10, 0.1) - 0.1) < 1e-12);
    /* a long pause refills no more than the bucket */
    ck_assert(hm_tb_take(&tb, 10, 100) == 0);
    ck_assert(fabs(hm_tb_take(&tb, 5, 100) - 0.05) < 1e-12);
    /* zero bytes never wait */
    ck_assert(hm_tb_take(&tb, 0, 100) == 0);
    /* time going backwards (two threads) does not refill */
    ck_assert(hm_tb_take(&tb, 5, 99) > 0.05);
}
END_TEST

START_TEST(test_tb_rate_bound)
{
    /* Random requests, the caller sleeping as told: the bytes moved by time t never
     * exceed burst + rate * t, and the rate over the run is the rate. */
    hm_tb_t tb;
    const double rate = 1e6, burst = 5e4;
    double t = 0, moved = 0;
    unsigned seed = 42;
    hm_tb_init(&tb, rate, burst, 0);
    for (int i = 0; i < 100000; i++) {
        double n = 1 + rand_r(&seed) % 20000;
        double d = hm_tb_take(&tb, n, t);
        t += d; /* sleep, then move n bytes at once */
        moved += n;
        ck_assert_msg(moved <= burst + rate * t + 1e-6, "moved %.0f by t=%.6f", moved, t);
        if (rand_r(&seed) % 10 == 0)
            t += (rand_r(&seed) % 1000) * 1e-6; /* compute between writes */
    }
    ck_assert(moved / t > rate * 0.95 && moved / t <= rate * 1.05);
}
END_TEST

START_TEST(test_tb_set_rate)
{
    hm_tb_t tb;
    hm_tb_init(&tb, 100, 10, 0);
    ck_assert(hm_tb_take(&tb, 10, 0) == 0);
    ck_assert(fabs(hm_tb_take(&tb, 100, 0) - 1.0) < 1e-12);
    /* the policy doubles the grant at t = 0.5: the debt (50 B left) is paid at 200 B/s */
    hm_tb_set_rate(&tb, 200, 20, 0.5);
    ck_assert(fabs(hm_tb_take(&tb, 0.0001, 0.5) - (50.0001 / 200)) < 1e-9);
    /* unlimited: no wait at all from now on */
    hm_tb_set_rate(&tb, 0, 0, 0.6);
    ck_assert(hm_tb_take(&tb, 1e9, 0.6) == 0);
    ck_assert(hm_tb_burst_for(1e3) == 262144);
    ck_assert(hm_tb_burst_for(1e9) == 5e7);
}
END_TEST

/* ------------------------------------------------------------------ API, off */
START_TEST(test_api_off)
{
    harmonia_t *h = NULL;
    harmonia_grant_t g;
    char path[] = "/tmp/test_harmonia_pace.XXXXXX";
    char buf[10000];
    int fd;

    unsetenv("HARMONIA_URL");
    unsetenv("HARMONIA_JOBID");
    ck_assert_int_eq(harmonia_init(&h, NULL), 0);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(harmonia_mode(h), HARMONIA_MODE_OFF);
    memset(&g, 0xff, sizeof(g));
    ck_assert_int_eq(harmonia_phase_begin(h, 1 << 20, HARMONIA_WRITE, &g), 0);
    ck_assert_int_eq(g.gated, 0);
    ck_assert(g.phase_id == 0 && g.bandwidth == 0 && g.rate == 0);
    ck_assert(harmonia_pace(h, 1 << 30) == 0);
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    memset(buf, 'x', sizeof(buf));
    ck_assert_int_eq(harmonia_write(h, fd, buf, sizeof(buf)), sizeof(buf));
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    ck_assert_int_eq(harmonia_read(h, fd, buf, sizeof(buf)), sizeof(buf));
    ck_assert_int_eq(harmonia_read(h, fd, buf, sizeof(buf)), 0); /* EOF */
    close(fd);
    unlink(path);
    ck_assert_int_eq(harmonia_phase_end(h, HARMONIA_BYTES_VOLUME), 0);
    ck_assert_int_eq(harmonia_phase_try_begin(h, 1, HARMONIA_READ, NULL), 0);
    ck_assert_int_eq(harmonia_phase_end(h, 1), 0);
    harmonia_finalize(h);

    /* only the URL, or HARMONIA_DISABLE: off too */
    setenv("HARMONIA_URL", "http://127.0.0.1:1", 1);
    ck_assert_int_eq(harmonia_init(&h, NULL), 0);
    ck_assert_int_eq(harmonia_mode(h), HARMONIA_MODE_OFF);
    harmonia_finalize(h);
    setenv("HARMONIA_JOBID", "42", 1);
    setenv("HARMONIA_DISABLE", "1", 1);
    ck_assert_int_eq(harmonia_init(&h, NULL), 0);
    ck_assert_int_eq(harmonia_mode(h), HARMONIA_MODE_OFF);
    harmonia_finalize(h);
    unsetenv("HARMONIA_DISABLE");
    unsetenv("HARMONIA_URL");
    unsetenv("HARMONIA_JOBID");
    harmonia_finalize(NULL);
}
END_TEST

START_TEST(test_api_misuse)
{
    harmonia_t *h = NULL;
    harmonia_opts_t o = { .url = "http://127.0.0.1:1", .jobid = "a/b", .quiet = 1 };
    errno = 0;
    ck_assert_int_eq(harmonia_init(NULL, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(harmonia_init(&h, &o), -1); /* not a job id */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(harmonia_phase_begin(NULL, 1, HARMONIA_WRITE, NULL), -1);
    ck_assert_int_eq(harmonia_phase_end(NULL, 1), -1);
    o.jobid = "7";
    ck_assert_int_eq(harmonia_init(&h, &o), 0);
    ck_assert_int_eq(harmonia_mode(h), HARMONIA_MODE_MANAGED);
    ck_assert_int_eq(harmonia_phase_begin(h, 1, (harmonia_dir_t)7, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(harmonia_phase_end(h, 1), -1); /* no phase */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(harmonia_dir_name(HARMONIA_READWRITE), "readwrite");
    ck_assert_str_eq(harmonia_mode_name(HARMONIA_MODE_FALLBACK), "fallback");
    harmonia_finalize(h);
}
END_TEST

START_TEST(test_api_unreachable)
{
    /* nothing listens on port 1: the phase proceeds ungated after the fallback wait */
    harmonia_t *h = NULL;
    harmonia_grant_t g;
    harmonia_opts_t o = { .url = "http://127.0.0.1:1",
                          .jobid = "7",
                          .quiet = 1,
                          .no_auth = 1,
                          .fallback_wait = 0.3,
                          .retry_interval = 100 };
    ck_assert_int_eq(harmonia_init(&h, &o), 0);
    ck_assert_int_eq(harmonia_phase_begin(h, 100, HARMONIA_WRITE, &g), 0);
    ck_assert_int_eq(g.gated, 0);
    ck_assert(g.wait >= 0.29 && g.wait < 3);
    ck_assert_int_eq(harmonia_mode(h), HARMONIA_MODE_FALLBACK);
    ck_assert_int_eq(harmonia_phase_end(h, 100), 0);
    /* later phases do not wait again (retry_interval not passed) */
    ck_assert_int_eq(harmonia_phase_try_begin(h, 100, HARMONIA_WRITE, &g), 0);
    ck_assert(g.wait < 0.1);
    ck_assert_int_eq(harmonia_phase_end(h, 100), 0);
    harmonia_finalize(h);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "core", .timeout = 30,
                                    .tests = { test_tb_unlimited, test_tb_hand_checked,
                                               test_tb_rate_bound, test_tb_set_rate, test_api_off,
                                               test_api_misuse, test_api_unreachable, NULL } } };
    return tu_main("harmonia_pace", tcases, TU_COUNT(tcases));
}
