/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gantt.c — a hand-written SVG Gantt chart of a run: one panel per policy, one row
 * per job; compute in green, I/O in blue shaded by the share of the I/O system the
 * job had (light: a small share, dark: all of B), waiting for I/O in red, and (with
 * a buffer tier) I/O slowed by a full buffer node in orange, hatched.  Every
 * rectangle has a <title> (hover text) with its times and bandwidth.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

#define LEFT 170 /* room for job names */
#define PLOT_W 1000
#define RIGHT 30
#define TOP 60
#define AXIS_H 30
#define PANEL_GAP 40
#define LEGEND_H 50

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            fputc(*s, f);
            break;
        }
    }
}

/* Blue from light (#deebf7) to dark (#08306b) as share goes from 0 to 1. */
static void io_color(double share, char *buf, size_t len)
{
    static const int lo[3] = { 0xde, 0xeb, 0xf7 }, hi[3] = { 0x08, 0x30, 0x6b };
    int c[3];
    if (!(share > 0))
        share = 0;
    if (share > 1)
        share = 1;
    share = 0.15 + 0.85 * share; /* even a small share stays visible */
    for (int i = 0; i < 3; i++)
        c[i] = (int)lround(lo[i] + (hi[i] - lo[i]) * share);
    snprintf(buf, len, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static double nice_step(double span)
{
    double raw = span / 10, p, m;
    if (!(raw > 0))
        return 1;
    p = pow(10, floor(log10(raw)));
    m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

int sim_gantt(const char *path, const wl_t *wl, const sim_result_t *res, int nres, hu_error_t *err)
{
    FILE *f;
    double tmin = INFINITY, tmax = -INFINITY;
    int rows = 0, row_h, height, y;
    double step;

    for (int p = 0; p < nres; p++) {
        if (!res[p].traces)
            continue;
        if (res[p].napps > rows)
            rows = res[p].napps;
        for (int i = 0; i < res[p].napps; i++) {
            const sim_trace_t *tr = &res[p].traces[i];
            for (int k = 0; k < tr->n; k++) {
                tmin = fmin(tmin, tr->segs[k].t0);
                tmax = fmax(tmax, tr->segs[k].t1);
            }
        }
    }
    if (!(tmin < tmax)) {
        tmin = 0;
        tmax = 1;
    }
    row_h = rows <= 40 ? 16 : rows <= 150 ? 8 : rows <= 600 ? 3 : 1;
    height = TOP + LEGEND_H + nres * (rows * row_h + AXIS_H + PANEL_GAP + 20);
    step = nice_step(tmax - tmin);

    if (!(f = fopen(path, "w"))) {
        int e = errno;
        if (err)
            snprintf(err->text, sizeof(err->text), "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
            LEFT + PLOT_W + RIGHT, height, LEFT + PLOT_W + RIGHT, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f,
            "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
            "bbsim: ",
            LEFT);
    esc(f, wl->file);
    /* what each bandwidth is: b per compute node, B of the PFS, and the buffer
     * nodes' own (one stream alone each, summed) */
    fprintf(f, " (%d nodes, b = %.4g GB/s each, PFS B = %.4g GB/s", wl->plat.nodes,
            wl->plat.node_bw / 1e9, wl->plat.bw / 1e9);
    if (wl->plat.nbnodes > 0) {
        double agg = 0;
        for (int k = 0; k < wl->plat.nbnodes; k++)
            agg += wl->plat.buffers[wl->plat.bnodes[k].entry].bandwidth;
        fprintf(f, "; %d buffer node%s, %.4g GB/s together", wl->plat.nbnodes,
                wl->plat.nbnodes > 1 ? "s" : "", agg / 1e9);
    }
    fprintf(f, ")</text>\n");

    /* legend */
    y = 34;
    fprintf(f,
            "<g font-size=\"11\">"
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"#a1d99b\"/>"
            "<text x=\"%d\" y=\"%d\">compute</text>"
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"#f28e8e\"/>"
            "<text x=\"%d\" y=\"%d\">waiting for I/O (no bandwidth)</text>"
            "<text x=\"%d\" y=\"%d\">I/O, rate as a share of B:</text>",
            LEFT, y, LEFT + 18, y + 9, LEFT + 90, y, LEFT + 108, y + 9, LEFT + 300, y + 9);
    for (int i = 0; i <= 10; i++) {
        char col[16];
        io_color(i / 10.0, col, sizeof(col));
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"20\" height=\"10\" "
                "fill=\"%s\"/>",
                LEFT + 395 + 20 * i, y, col);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\">0%%</text><text x=\"%d\" y=\"%d\">"
            "100%%</text></g>\n",
            LEFT + 395, y + 22, LEFT + 595, y + 22);
    if (nres > 0 && res[0].has_buffers) {
        fprintf(f,
                "<defs><pattern id=\"full\" width=\"6\" height=\"6\" "
                "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                "<rect width=\"6\" height=\"6\" fill=\"#fd8d3c\"/>"
                "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#a63603\" "
                "stroke-width=\"2\"/></pattern></defs>\n"
                "<g font-size=\"11\"><rect x=\"%d\" y=\"%d\" width=\"14\" "
                "height=\"10\" fill=\"url(#full)\"/><text x=\"%d\" y=\"%d\">"
                "buffer full (stall: drain rate)</text></g>\n",
                LEFT + 640, y, LEFT + 658, y + 9);
    }

    y = TOP + LEGEND_H - 20;
    for (int p = 0; p < nres; p++) {
        const sim_result_t *r = &res[p];
        int ph = r->napps * row_h;
        if (!r->traces)
            continue;
        fprintf(f,
                "<g>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" "
                "font-weight=\"bold\">policy ",
                LEFT, y);
        esc(f, r->policy);
        /* the table's figures under its names, each with its definition (a
         * chart shown beside another tool's table must not be read as its) */
        fprintf(f,
                " — SysEfficiency %.2f%% (upper limit %.2f%%), Dilation %.3f "
                "(max over jobs of rho/rho~), stretch (time / time alone) max %.3f, "
                "mean %.3f</text>\n",
                100 * r->m.sys_efficiency, 100 * r->m.upper_limit, r->m.dilation, r->m.stretch_max,
                r->m.stretch_mean);
        y += 8;
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                "fill=\"#fafafa\" stroke=\"#999\"/>\n",
                LEFT, y, PLOT_W, ph);
        for (int i = 0; i < r->napps; i++) {
            const sim_trace_t *tr = &r->traces[i];
            int ry = y + i * row_h;
            if (row_h >= 8) {
                fprintf(f,
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
                        "font-size=\"%d\">",
                        LEFT - 6, ry + row_h - 3, row_h >= 16 ? 11 : 7);
                esc(f, r->names[i]);
                fputs("</text>\n", f);
            }
            for (int k = 0; k < tr->n; k++) {
                const sim_seg_t *sg = &tr->segs[k];
                double x0 = LEFT + PLOT_W * (sg->t0 - tmin) / (tmax - tmin);
                double x1 = LEFT + PLOT_W * (sg->t1 - tmin) / (tmax - tmin);
                char col[16];
                double wpx = x1 - x0;
                if (wpx < 0.05)
                    wpx = 0.05;
                if (sg->kind == SEG_COMPUTE)
                    snprintf(col, sizeof(col), "#a1d99b");
                else if (sg->kind == SEG_STALL)
                    snprintf(col, sizeof(col), "url(#full)");
                else if (sg->bw <= 0)
                    snprintf(col, sizeof(col), "#f28e8e");
                else
                    io_color(sg->bw / r->bw, col, sizeof(col));
                fprintf(f,
                        "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\""
                        " fill=\"%s\"><title>",
                        x0, ry + (row_h > 2 ? 1 : 0), wpx, row_h > 2 ? row_h - 2 : row_h, col);
                esc(f, r->names[i]);
                if (sg->kind == SEG_COMPUTE)
                    fprintf(f, ": compute %.6g–%.6g s", sg->t0, sg->t1);
                else if (sg->kind == SEG_STALL)
                    fprintf(f,
                            ": buffer full (stall) %.6g–%.6g s at %.4g GB/s, the "
                            "node's drain rate",
                            sg->t0, sg->t1, sg->bw / 1e9);
                else if (sg->bw <= 0)
                    fprintf(f, ": waiting %.6g–%.6g s", sg->t0, sg->t1);
                else
                    fprintf(f, ": I/O %.6g–%.6g s at %.4g GB/s (%.1f%% of B)", sg->t0, sg->t1,
                            sg->bw / 1e9, 100 * sg->bw / r->bw);
                fputs("</title></rect>\n", f);
            }
        }
        /* time axis */
        y += ph;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", LEFT, y,
                LEFT + PLOT_W, y);
        for (int ti = 0; ti <= 40; ti++) {
            double tk = (ceil(tmin / step) + ti) * step;
            double x;
            if (tk > tmax + 1e-9 * step)
                break;
            x = LEFT + PLOT_W * (tk - tmin) / (tmax - tmin);
            fprintf(f,
                    "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                    "stroke=\"black\"/><text x=\"%.2f\" y=\"%d\" "
                    "text-anchor=\"middle\">%g</text>\n",
                    x, y, x, y + 5, x, y + 17, tk);
        }
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">time (s)</text>\n"
                "</g>\n",
                LEFT + PLOT_W, y + 29);
        y += AXIS_H + PANEL_GAP;
    }
    fputs("</svg>\n", f);
    if (fclose(f) != 0) {
        int e = errno;
        if (err)
            snprintf(err->text, sizeof(err->text), "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}
