/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harmonia-io — run a command as one I/O phase of the job (libharmonia).
 *
 *   harmonia-io --volume 10GiB [--direction write|read|readwrite] [-v] -- cp a b
 *
 * Asks bbmgrd for the phase, waits for the grant, runs the command, ends the phase
 * and exits with the command's status (128+N when it was killed by signal N; 126
 * when it cannot be run, 127 when it is not found).  Not under Harmonia, or with the
 * manager unreachable, the command runs ungated (libharmonia's rules).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harmonia/harmonia.h"
#include "libhutil/hutil.h"
#include "libhutil/options.h"

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
    got_term = sig;
}

static const char usage_text[] =
    "Usage: harmonia-io --volume SIZE [OPTIONS] [--] COMMAND [ARGS...]\n"
    "Run COMMAND as one I/O phase of the job: wait for bbmgrd's grant, run it,\n"
    "end the phase.  Exits with COMMAND's status.\n\n";

static const hu_option_t options[] = {
    { "volume", required_argument, 's', "SIZE", "bytes the command moves (10GiB, 500MB, 4096)" },
    { "direction", required_argument, 'd', "DIR", "write (default), read or readwrite" },
    { "bytes", required_argument, 'b', "SIZE", "bytes to report at the end (default: the volume)" },
    { "verbose", no_argument, 'v', NULL, "print the grant and the phase's times on stderr" },
    { "quiet", no_argument, 'q', NULL, "no libharmonia messages on stderr" },
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 27, usage_text);
    fprintf(f, "\nEnvironment: HARMONIA_URL, HARMONIA_JOBID (unset: the command runs ungated),\n"
               "HARMONIA_FALLBACK_WAIT, HARMONIA_MAX_WAIT, HARMONIA_MUNGE_SOCKET; see\n"
               "harmonia-io(1) and doc/libharmonia.md.\n");
}

int main(int argc, char **argv)
{
    harmonia_opts_t hopts = { 0 };
    harmonia_grant_t g;
    harmonia_dir_t dir = HARMONIA_WRITE;
    harmonia_t *h = NULL;
    uint64_t volume = 0, bytes = HARMONIA_BYTES_VOLUME;
    bool have_volume = false, verbose = false;
    hu_error_t err;
    char buf[64], bwbuf[64];
    int opt, status, rc;
    hu_getopt_t go;

    hu_getopt_init(&go, options, "+");
    while ((opt = getopt_long(argc, argv, go.shortopts, go.longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            if (hu_parse_size(optarg, HU_SIZE_BARE_BYTES, &volume, &err) < 0) {
                fprintf(stderr, "harmonia-io: --volume: %s\n", err.text);
                return 2;
            }
            have_volume = true;
            break;
        case 'b':
            if (hu_parse_size(optarg, HU_SIZE_BARE_BYTES, &bytes, &err) < 0) {
                fprintf(stderr, "harmonia-io: --bytes: %s\n", err.text);
                return 2;
            }
            break;
        case 'd': {
            static const char *const dirs[] = { "write", "read", "readwrite", NULL };
            int k = hu_option_choice(stderr, "harmonia-io", "--direction", optarg, dirs);
            if (k < 0)
                return 2;
            dir = (harmonia_dir_t)k; /* dirs[] is in its order */
            break;
        }
        case 'v':
            verbose = true;
            break;
        case 'q':
            hopts.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!have_volume || optind >= argc) {
        fprintf(stderr, "harmonia-io: %s\n",
                !have_volume ? "--volume is required" : "no command given");
        usage(stderr);
        return 2;
    }
    if (harmonia_init(&h, &hopts) < 0) {
        fprintf(stderr, "harmonia-io: harmonia_init: %s\n", strerror(errno));
        return 1;
    }
    double t0 = hu_mono();
    if (harmonia_phase_begin(h, volume, dir, &g) < 0) {
        fprintf(stderr, "harmonia-io: harmonia_phase_begin: %s\n", strerror(errno));
        harmonia_finalize(h);
        return 1;
    }
    if (verbose) {
        if (g.gated) {
            fprintf(stderr,
                    "harmonia-io: phase %ju (%s, %s) granted after %.3f s: "
                    "bandwidth %s/s",
                    (uintmax_t)g.phase_id, harmonia_dir_name(dir),
                    hu_size_str(volume, buf, sizeof(buf)), g.wait,
                    g.bandwidth > 0 ? hu_size_str_si(g.bandwidth, bwbuf, sizeof(bwbuf)) : "?");
            if (g.share > 0)
                fprintf(stderr, " (share %.3f)", g.share);
            if (g.target[0])
                fprintf(stderr, ", target %s", g.target);
            for (int i = 0; i < g.nnodes && i < 16; i++)
                fprintf(stderr, "%s%s", i ? "," : ", nodes ", g.nodes[i]);
            if (g.path[0])
                fprintf(stderr, ", path %s", g.path);
            fprintf(stderr, "%s\n", g.joined ? " (joined)" : "");
        } else
            fprintf(stderr, "harmonia-io: phase ungated (libharmonia %s) after %.3f s\n",
                    harmonia_mode_name(harmonia_mode(h)), g.wait);
    }

    /* As system(3): the command gets the terminal's signals, we wait for it. */
    struct sigaction ign = { .sa_handler = SIG_IGN }, term = { .sa_handler = on_term };
    struct sigaction old_int, old_quit, old_term;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&term.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &term, &old_term); /* no SA_RESTART: waitpid returns */

    double t1 = hu_mono();
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "harmonia-io: fork: %s\n", strerror(errno));
        rc = 1;
        goto end;
    }
    if (child == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        execvp(argv[optind], argv + optind);
        int e = errno;
        fprintf(stderr, "harmonia-io: %s: %s\n", argv[optind], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    bool forwarded = false;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "harmonia-io: waitpid: %s\n", strerror(errno));
            status = 1 << 8;
            break;
        }
        if (got_term && !forwarded) {
            kill(child, got_term);
            forwarded = true;
        }
    }
    if (WIFEXITED(status))
        rc = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        rc = 128 + WTERMSIG(status);
    else
        rc = 1;
end:;
    double t2 = hu_mono();
    harmonia_phase_end(h, bytes);
    if (verbose)
        fprintf(stderr, "harmonia-io: phase ended: wait %.3f s, command %.3f s, exit %d\n", t1 - t0,
                t2 - t1, rc);
    harmonia_finalize(h);
    return rc;
}
