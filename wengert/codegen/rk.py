"""Explicit Runge–Kutta solves in C: SciPy's RK23, RK45 and DOP853, step for step.

`solve_ivp(..., backend="c")` (wengert.scipy.integrate) runs here.  SciPy takes every
step of its explicit methods in Python and calls the right-hand side through Python: for
a small system that is ~50 µs a step, almost none of it arithmetic.  Here the right-hand
side is a graph, written as C by the C back-end (`c.function_source`), and the stepping
loop below is C too, so a whole solve is one call.

The loop is SciPy's algorithm, not another one: the same initial step
(`select_initial_step`), the same tableaus (read from the installed SciPy when the code
is written), the same RMS error norm and step-size control (safety 0.9, factors between
0.2 and 10, no growth right after a rejection), the same dense output at t_eval (and
DOP853's three extra stages for it), and the same count of function evaluations.  The
sums run in another order than NumPy's BLAS calls, so results agree with SciPy's to
rounding, and the steps are SciPy's unless an error estimate falls within rounding of
the acceptance threshold.

One C source holds the right-hand side and the loop; the compiled library is kept per
source (`c.library`).  The entry point::

    int wg_solve(int n, double t0, double tf, const double *y0, const double *leaves,
                 long n_leaves, const double *t_eval, long n_eval, const double *rtol,
                 const double *atol, double max_step, double first_step, int dense,
                 int n_events, const double *max_events, const double *event_dir,
                 wg_check interrupted, wg_out *out)

returns 0 when the solve reached tf, -1 when the step fell below ten times the spacing
of floats at t (SciPy's failure), -2 when memory ran out, -3 when Ctrl-C stopped it (the
library is called with the GIL held and asks Python's signal check every 1024 steps, so
a long solve stops as SciPy's would, with KeyboardInterrupt).  With ``n_eval < 0`` the
states are reported at every step (SciPy's t_eval=None); ``dense`` also keeps each
step's interpolant, for SciPy's `OdeSolution`.

Events are SciPy's too: the event functions (``wg_events``, traced and written as the
right-hand side is) are evaluated after every step; where one changes sign in its
direction, its root on the step's interpolant is found by Brent's method to SciPy's
tolerance (4 ε), and a terminal event (one that occurred `max_events` times) ends the
solve there, status 1.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .c import function_source, library

#: The methods this loop runs, and SciPy's class for each.
METHODS = ("RK23", "RK45", "DOP853")

#: What a solve's status says (SciPy's words for its own failure).
MESSAGES = {0: "The solver successfully reached the end of the integration interval.",
            1: "A termination event occurred.",
            -1: "Required step size is less than spacing between numbers.",
            -2: "The C solver ran out of memory."}

_DRIVER = r"""
#include <stdlib.h>
#include <string.h>

typedef struct { double *data; long len, cap; } wg_buf;

/* What a solve reports: output times and states, each step's interpolant (dense), the
   events found (per occurrence: the event's index, its time, the state there), the
   number of right-hand side evaluations and the time where the solve ended.  The
   buffers are malloc'ed: wg_free. */
typedef struct { wg_buf t, y, dense, events; long nfev; double t_last; } wg_out;

static int wg_push(wg_buf *b, const double *x, long m)
{
    if (b->len + m > b->cap) {
        long cap = b->cap ? 2 * b->cap : 64;
        while (cap < b->len + m) cap *= 2;
        double *d = realloc(b->data, cap * sizeof(double));
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, x, m * sizeof(double));
    b->len += m;
    return 0;
}

void wg_free(wg_out *out)
{
    free(out->t.data);
    free(out->y.data);
    free(out->dense.data);
    free(out->events.data);
    memset(out, 0, sizeof(*out));
}

/* Python's min(a, b) and max(a, b): a unless b is strictly smaller (larger), as SciPy's
   step control computes them (a nan never wins). */
static double py_min(double a, double b) { return b < a ? b : a; }
static double py_max(double a, double b) { return b > a ? b : a; }
/* NumPy's maximum: nan if either is */
static double np_max(double a, double b) { return (a >= b || a != a) ? a : b; }

typedef struct {
    int n;
    double *in;         /* the right-hand side's inputs: [y, t, leaves] */
    long nfev;
} wg_sys;

static void fun(wg_sys *S, double t, const double *y, double *f)
{
    memcpy(S->in, y, S->n * sizeof(double));
    S->in[S->n] = t;
    wg_rhs(S->in, f);
    S->nfev++;
}

/* RMS norm of x / scale */
static double rms(int n, const double *x, const double *scale)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) { double v = x[i] / scale[i]; s += v * v; }
    return sqrt(s) / sqrt((double)n);
}

/* SciPy's select_initial_step */
static double initial_step(wg_sys *S, double t0, const double *y0, double tf,
                           double max_step, const double *f0, double direction,
                           const double *rtol, const double *atol, double *scale,
                           double *y1, double *f1)
{
    int n = S->n;
    double interval = fabs(tf - t0);
    if (interval == 0.0) return 0.0;
    for (int i = 0; i < n; i++) scale[i] = atol[i] + fabs(y0[i]) * rtol[i];
    double d0 = rms(n, y0, scale), d1 = rms(n, f0, scale), h0;
    if (d0 < 1e-5 || d1 < 1e-5) h0 = 1e-6;
    else h0 = 0.01 * d0 / d1;
    h0 = py_min(h0, interval);
    for (int i = 0; i < n; i++) y1[i] = y0[i] + h0 * direction * f0[i];
    fun(S, t0 + h0 * direction, y1, f1);
    for (int i = 0; i < n; i++) y1[i] = f1[i] - f0[i];
    double d2 = rms(n, y1, scale) / h0, h1;
    if (d1 <= 1e-15 && d2 <= 1e-15) h1 = py_max(1e-6, h0 * 1e-3);
    else h1 = pow(0.01 / py_max(d1, d2), 1.0 / (ESTIMATOR_ORDER + 1));
    return py_min(py_min(py_min(100 * h0, h1), interval), max_step);
}

/* K[row] = f(t + C[row] h, y + h sum_j A[row][j] K[j]) */
static void stage(wg_sys *S, int row, double t, double h, const double *y, double *K,
                  double *tmp)
{
    int n = S->n;
    for (int i = 0; i < n; i++) {
        double acc = 0.0;
        for (int j = 0; j < row; j++) acc += K[j * n + i] * A[row][j];
        tmp[i] = y[i] + acc * h;
    }
    fun(S, t + C[row] * h, tmp, K + row * n);
}

/* The error norm of the step just taken (K holds its stages and f_new) */
static double error_norm(int n, const double *K, double h, const double *scale)
{
#if DOP
    double e5 = 0.0, e3 = 0.0;
    for (int i = 0; i < n; i++) {
        double a = 0.0, b = 0.0;
        for (int j = 0; j <= STAGES; j++) { a += K[j * n + i] * E5[j]; b += K[j * n + i] * E3[j]; }
        a /= scale[i]; b /= scale[i];
        e5 += a * a; e3 += b * b;
    }
    if (e5 == 0.0 && e3 == 0.0) return 0.0;
    return fabs(h) * e5 / sqrt((e5 + 0.01 * e3) * n);
#else
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double e = 0.0;
        for (int j = 0; j <= STAGES; j++) e += K[j * n + i] * E[j];
        e = e * h / scale[i];
        s += e * e;
    }
    return sqrt(s) / sqrt((double)n);
#endif
}

/* The interpolant of the step from (t_old, y_old) to (t, y): Q (RK23, RK45: n rows of
   POWER coefficients) or F (DOP853: POWER rows of n), as SciPy's dense output has it. */
static void interpolant(wg_sys *S, double t_old, double t, const double *y_old,
                        const double *y, const double *f, double *K, double *tmp,
                        double *coef)
{
    int n = S->n;
    double h = t - t_old;
#if DOP
    for (int row = STAGES + 1; row < STAGES + 4; row++) stage(S, row, t_old, h, y_old, K, tmp);
    for (int i = 0; i < n; i++) {
        double dy = y[i] - y_old[i];
        coef[i] = dy;
        coef[n + i] = h * K[i] - dy;
        coef[2 * n + i] = 2 * dy - h * (f[i] + K[i]);
    }
    for (int r = 0; r < POWER - 3; r++)
        for (int i = 0; i < n; i++) {
            double acc = 0.0;
            for (int j = 0; j < STAGES + 4; j++) acc += D[r][j] * K[j * n + i];
            coef[(3 + r) * n + i] = h * acc;
        }
#else
    (void)t_old; (void)t; (void)y_old; (void)y; (void)f; (void)tmp; (void)h;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < POWER; k++) {
            double acc = 0.0;
            for (int j = 0; j <= STAGES; j++) acc += K[j * n + i] * P[j][k];
            coef[i * POWER + k] = acc;
        }
#endif
}

/* The interpolant's state at time s */
static void evaluate(int n, double t_old, double t, const double *y_old, const double *coef,
                     double s, double *out)
{
    double h = t - t_old, x = (s - t_old) / h;
#if DOP
    for (int i = 0; i < n; i++) {
        double v = 0.0;
        for (int r = POWER - 1, k = 0; r >= 0; r--, k++) {
            v += coef[r * n + i];
            v *= (k % 2 == 0) ? x : 1 - x;
        }
        out[i] = v + y_old[i];
    }
#else
    double p[POWER];
    p[0] = x;
    for (int k = 1; k < POWER; k++) p[k] = p[k - 1] * x;
    for (int i = 0; i < n; i++) {
        double acc = 0.0;
        for (int k = 0; k < POWER; k++) acc += coef[i * POWER + k] * p[k];
        out[i] = h * acc + y_old[i];
    }
#endif
}

/* The event functions at (t, y), all N_EVENTS of them */
static void events_at(wg_sys *S, double t, const double *y, double *g)
{
    memcpy(S->in, y, S->n * sizeof(double));
    S->in[S->n] = t;
    wg_events(S->in, g);
}

/* One accepted step and its interpolant, for locating an event inside it */
typedef struct {
    double t_old, t_end;
    const double *y_old, *coef;
    double *y, *g;          /* scratch: a state, the event values */
} wg_step;

static double event_in_step(wg_sys *S, const wg_step *P, int e, double s)
{
    evaluate(S->n, P->t_old, P->t_end, P->y_old, P->coef, s, P->y);
    events_at(S, s, P->y, P->g);
    return P->g[e];
}

/* The time in [a, b] where event e crosses zero on the step's interpolant, by Brent's
   method (the textbook zeroin: bisection, secant and inverse quadratic steps, with b
   the best point so far and c a point where the sign differs), to SciPy's tolerance for
   events: |b - root| within (4 eps + 4 eps |b|) / 2.  *status: 0, or -4 when f(a) and
   f(b) have the same sign, -5 when 100 iterations did not converge (SciPy's brentq
   raises for both). */
static double event_root(wg_sys *S, const wg_step *P, int e, double a, double b,
                         int *status)
{
    const double EPS4 = 4 * 2.220446049250313e-16;
    double fa = event_in_step(S, P, e, a), fb = event_in_step(S, P, e, b);
    *status = 0;
    if (fa * fb > 0) { *status = -4; return b; }
    if (fa == 0) return a;
    if (fb == 0) return b;
    double c = a, fc = fa, d = b - a, step = d;
    for (int it = 0; it < 100; it++) {
        if ((fb > 0) == (fc > 0)) { c = a; fc = fa; d = step = b - a; }
        if (fabs(fc) < fabs(fb)) {          /* b is the best point so far */
            a = b; b = c; c = a;
            fa = fb; fb = fc; fc = fa;
        }
        double tol = (EPS4 + EPS4 * fabs(b)) / 2, half = (c - b) / 2;
        if (fb == 0 || fabs(half) < tol) return b;
        if (fabs(step) < tol || fabs(fa) <= fabs(fb)) {
            d = step = half;                /* bisection */
        } else {
            double p, q, r, ratio = fb / fa;
            if (a == c) {                   /* secant */
                p = 2 * half * ratio;
                q = 1 - ratio;
            } else {                        /* inverse quadratic interpolation */
                q = fa / fc;
                r = fb / fc;
                p = ratio * (2 * half * q * (q - r) - (b - a) * (r - 1));
                q = (q - 1) * (r - 1) * (ratio - 1);
            }
            if (p > 0) q = -q; else p = -p;
            if (2 * p < 3 * half * q - fabs(tol * q) && p < fabs(step * q / 2)) {
                step = d;
                d = p / q;
            } else {
                d = step = half;
            }
        }
        a = b;
        fa = fb;
        b += fabs(d) > tol ? d : (half > 0 ? tol : -tol);
        fb = event_in_step(S, P, e, b);
    }
    *status = -5;
    return b;
}

/* Python's PyErr_CheckSignals, handed in by the caller, which holds the GIL (PyDLL):
   asked every 1024 steps, so that Ctrl-C stops a solve that would run for long. */
typedef int (*wg_check)(void);

int wg_solve(int n, double t0, double tf, const double *y0, const double *leaves,
             long n_leaves, const double *t_eval, long n_eval, const double *rtol,
             const double *atol, double max_step, double first_step, int dense,
             int n_events, const double *max_events, const double *event_dir,
             wg_check interrupted, wg_out *out)
{
    const double SAFETY = 0.9, MIN_FACTOR = 0.2, MAX_FACTOR = 10.0;
    const double exponent = -1.0 / (ESTIMATOR_ORDER + 1);
    const double direction = tf != t0 ? (tf > t0 ? 1.0 : -1.0) : 1.0;
    const long ncoef = (long)n * POWER;
    int status = -2;
    wg_sys S = {n, NULL, 0};
    memset(out, 0, sizeof(*out));
    /* one block: in, K (all rows), y, y_new, f, tmp, scale, coef, record */
    long rows = STAGES + 1 + 3 * DOP;
    double *mem = malloc(((long)n + 1 + n_leaves + rows * n + 6L * n + ncoef + 2) *
                         sizeof(double));
    if (!mem) return -2;
    S.in = mem;
    double *K = S.in + n + 1 + n_leaves, *y = K + rows * n, *y_new = y + n, *f = y_new + n,
           *tmp = f + n, *scale = tmp + n, *y_old = scale + n, *coef = y_old + n;
    memcpy(S.in + n + 1, leaves, n_leaves * sizeof(double));
    memcpy(y, y0, n * sizeof(double));
    /* the events: values before and after the step, occurrences so far, the ones in
       this step (index and root), a state */
    double *ev = n_events ? malloc((5L * n_events + n) * sizeof(double)) : NULL;
    if (n_events && !ev) { free(mem); return -2; }
    double *g = ev, *g_new = g + n_events, *count = g_new + n_events,
           *roots = count + n_events, *found = roots + n_events,
           *y_event = found + n_events;
    double t = t0, h_abs;
    long ie = 0, attempts = 0;
    if (n_events) {
        events_at(&S, t, y, g);
        memset(count, 0, n_events * sizeof(double));
    }
    fun(&S, t, y, f);
    if (first_step > 0) h_abs = first_step;
    else h_abs = initial_step(&S, t0, y, tf, max_step, f, direction, rtol, atol, scale,
                              tmp, K);
    if (n_eval < 0 && (wg_push(&out->t, &t, 1) || wg_push(&out->y, y, n))) goto done;
    for (;;) {
        /* one step: SciPy's RungeKutta._step_impl */
        double min_step = 10 * fabs(nextafter(t, direction * INFINITY) - t);
        double h, t_new;
        int rejected = 0;
        if (h_abs > max_step) h_abs = max_step;
        else if (h_abs < min_step) h_abs = min_step;
        for (;;) {
            /* (a nan step, from a nan derivative at the start, would never fall below
               min_step: SciPy's loop then runs forever, this one fails) */
            if (h_abs < min_step || h_abs != h_abs) { status = -1; goto done; }
            if (++attempts % 1024 == 0 && interrupted && interrupted()) {
                status = -3;
                goto done;
            }
            h = h_abs * direction;
            t_new = t + h;
            if (direction * (t_new - tf) > 0) t_new = tf;
            h = t_new - t;
            h_abs = fabs(h);
            memcpy(K, f, n * sizeof(double));
            for (int row = 1; row < STAGES; row++) stage(&S, row, t, h, y, K, tmp);
            for (int i = 0; i < n; i++) {
                double acc = 0.0;
                for (int j = 0; j < STAGES; j++) acc += K[j * n + i] * B[j];
                y_new[i] = y[i] + h * acc;
            }
            fun(&S, t + h, y_new, K + STAGES * n);
            for (int i = 0; i < n; i++)
                scale[i] = atol[i] + np_max(fabs(y[i]), fabs(y_new[i])) * rtol[i];
            double err = error_norm(n, K, h, scale);
            if (err < 1) {
                double factor = err == 0 ? MAX_FACTOR
                                         : py_min(MAX_FACTOR, SAFETY * pow(err, exponent));
                if (rejected) factor = py_min(1, factor);
                h_abs *= factor;
                break;
            }
            h_abs *= py_max(MIN_FACTOR, SAFETY * pow(err, exponent));
            rejected = 1;
        }
        double t_old = t;
        memcpy(y_old, y, n * sizeof(double));
        memcpy(y, y_new, n * sizeof(double));
        memcpy(f, K + STAGES * n, n * sizeof(double));
        t = t_new;
        /* what solve_ivp records after the step */
        int made = 0, terminate = 0;
        double t_end = t;           /* the step's end (t becomes a terminal event's time) */
        if (dense) {
            interpolant(&S, t_old, t, y_old, y, f, K, tmp, coef);
            made = 1;
            double ends[2] = {t_old, t};
            if (wg_push(&out->dense, ends, 2) || wg_push(&out->dense, y_old, n) ||
                wg_push(&out->dense, coef, ncoef)) goto done;
        }
        if (n_events) {
            /* SciPy's find_active_events and handle_events */
            int m = 0;
            events_at(&S, t, y, g_new);
            for (int e = 0; e < n_events; e++) {
                int up = g[e] <= 0 && g_new[e] >= 0, down = g[e] >= 0 && g_new[e] <= 0;
                if ((up && event_dir[e] > 0) || (down && event_dir[e] < 0) ||
                    ((up || down) && event_dir[e] == 0))
                    found[m++] = e;
            }
            if (m) {
                if (!made) {
                    interpolant(&S, t_old, t, y_old, y, f, K, tmp, coef);
                    made = 1;
                }
                wg_step P = {t_old, t_end, y_old, coef, y_event, g};
                for (int k = 0; k < m; k++) {
                    int e = (int)found[k], failed;
                    count[e] += 1;
                    roots[k] = event_root(&S, &P, e, t_old, t_end, &failed);
                    if (failed) { status = failed; goto done; }
                }
                for (int k = 0; k < m; k++)
                    if (count[(int)found[k]] >= max_events[(int)found[k]]) terminate = 1;
                if (terminate) {
                    /* in the order they happen; the solve ends at the first terminal one */
                    for (int k = 1; k < m; k++)         /* (insertion sort: m is small) */
                        for (int j = k; j > 0 && direction * (roots[j] - roots[j - 1]) < 0;
                             j--) {
                            double r = roots[j]; roots[j] = roots[j - 1]; roots[j - 1] = r;
                            double e = found[j]; found[j] = found[j - 1]; found[j - 1] = e;
                        }
                    int last = 0;
                    while (count[(int)found[last]] < max_events[(int)found[last]]) last++;
                    m = last + 1;
                }
                for (int k = 0; k < m; k++) {
                    double head[2] = {found[k], roots[k]};
                    evaluate(n, t_old, t_end, y_old, coef, roots[k], y_event);
                    if (wg_push(&out->events, head, 2) || wg_push(&out->events, y_event, n))
                        goto done;
                }
                if (terminate) {
                    t = roots[m - 1];
                    evaluate(n, t_old, t_end, y_old, coef, t, y);
                }
            }
            double *swap = g; g = g_new; g_new = swap;
        }
        if (n_eval < 0) {
            if (wg_push(&out->t, &t, 1) || wg_push(&out->y, y, n)) goto done;
        } else {
            while (ie < n_eval && (direction > 0 ? t_eval[ie] <= t : t_eval[ie] >= t)) {
                if (!made) { interpolant(&S, t_old, t, y_old, y, f, K, tmp, coef); made = 1; }
                evaluate(n, t_old, t_end, y_old, coef, t_eval[ie], tmp);
                if (wg_push(&out->t, t_eval + ie, 1) || wg_push(&out->y, tmp, n)) goto done;
                ie++;
            }
        }
        if (terminate) { status = 1; break; }
        if (direction * (t - tf) >= 0) { status = 0; break; }
    }
done:
    out->nfev = S.nfev;
    out->t_last = t;
    free(mem);
    free(ev);
    return status;
}

/* Solves one after another, each from the end of the last: solve k runs from times[k] to
   times[k + 1], reporting y at both (as solve_ivp does for t_eval = [t0, tf]: the end
   state is the interpolant's, not the step's), and starts from
   keep ? end + add[k] : add[k] (solve 0 from add[0]).  A solve over no time leaves the
   state as it is.  ends[k] is where solve k ended.  This is the adjoint method's
   backward sweep, one output interval at a time, in one call.  Returns the first
   failure's status (and its segment in *failed), else 0. */
int wg_chain(int n, long n_seg, const double *times, const double *keep,
             const double *add, const double *leaves, long n_leaves, const double *rtol,
             const double *atol, double max_step, wg_check interrupted, double *ends,
             long *nfev, long *failed)
{
    double *start = malloc(n * sizeof(double));
    if (!start) return -2;
    *nfev = 0;
    for (long k = 0; k < n_seg; k++) {
        for (int i = 0; i < n; i++)
            start[i] = (k > 0 && keep[i] != 0.0) ? ends[(k - 1) * n + i] + add[k * n + i]
                                                 : add[k * n + i];
        if (times[k] == times[k + 1]) {
            memcpy(ends + k * n, start, n * sizeof(double));
            continue;
        }
        wg_out out;
        int status = wg_solve(n, times[k], times[k + 1], start, leaves, n_leaves,
                              times + k, 2, rtol, atol, max_step, 0.0, 0, 0, NULL, NULL,
                              interrupted, &out);
        *nfev += out.nfev;
        if (status == 0) memcpy(ends + k * n, out.y.data + n, n * sizeof(double));
        wg_free(&out);
        if (status != 0) { free(start); *failed = k; return status; }
    }
    free(start);
    return 0;
}

/* The right-hand side at m points (t[k], y[k]) */
void wg_rhs_at(int n, long m, const double *y, const double *t, const double *leaves,
               long n_leaves, double *f)
{
    double *in = malloc((n + 1 + n_leaves) * sizeof(double));
    if (!in) return;
    memcpy(in + n + 1, leaves, n_leaves * sizeof(double));
    for (long k = 0; k < m; k++) {
        memcpy(in, y + k * n, n * sizeof(double));
        in[n] = t[k];
        wg_rhs(in, f + k * n);
    }
    free(in);
}
"""


class _Buf(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_double)), ("len", ctypes.c_long),
                ("cap", ctypes.c_long)]


class _Out(ctypes.Structure):
    _fields_ = [("t", _Buf), ("y", _Buf), ("dense", _Buf), ("events", _Buf),
                ("nfev", ctypes.c_long), ("t_last", ctypes.c_double)]


#: The event functions of a solve without events.
_NO_EVENTS = ("static void wg_events(const double *in, double *out) "
              "{ (void)in; (void)out; }\n")


# (arrays go to C as addresses: ctypes' data_as costs ~5 µs an argument, a solve has 14)
_DOUBLES = ctypes.c_void_p


def _array(value, name) -> str:
    """A C array definition of `value`'s numbers (written so that they read back
    exactly)."""
    value = np.asarray(value, dtype=np.float64)
    dims = "".join(f"[{d}]" for d in value.shape)

    def rows(v):
        if v.ndim == 1:
            return "{" + ", ".join(repr(float(x)) for x in v) + "}"
        return "{" + ",\n    ".join(rows(r) for r in v) + "}"
    return f"static const double {name}{dims} = {rows(value)};"


def tableau_source(method) -> str:
    """The C definitions of SciPy's tableau for `method` (one of `METHODS`), as the
    driver reads them: STAGES, ESTIMATOR_ORDER, POWER (the interpolant's size), DOP, and
    the arrays A, B, C with E (RK23, RK45) or E3, E5, D (DOP853).

    Example:
        >>> print(tableau_source("RK23").splitlines()[0])
        #define STAGES 3
    """
    cls = _scipy_class(method)
    stages = cls.n_stages
    dop = method == "DOP853"
    lines = [f"#define STAGES {stages}",
             f"#define ESTIMATOR_ORDER {cls.error_estimator_order}",
             f"#define DOP {int(dop)}",
             f"#define POWER {_power(method)}"]
    if dop:
        # the stages of the step (rows 0..STAGES-1), then, after f_new's row STAGES, the
        # three extra stages of the dense output: A and C of SciPy's full table, 16 rows
        from scipy.integrate._ivp import dop853_coefficients as dc
        a = np.zeros((stages + 4, stages + 4))
        a[:stages, :stages] = cls.A
        a[stages + 1:, :] = dc.A[stages + 1:stages + 4, :stages + 4]
        c = dc.C[:stages + 4]
        lines += [_array(a, "A"), _array(c, "C"), _array(cls.B, "B"),
                  _array(cls.E3, "E3"), _array(cls.E5, "E5"), _array(cls.D, "D")]
    else:
        lines += [_array(cls.A, "A"), _array(cls.C, "C"), _array(cls.B, "B"),
                  _array(cls.E, "E"), _array(cls.P, "P")]
    return "\n".join(lines) + "\n"


def _scipy_class(method):
    """SciPy's solver class of `method` (one of `METHODS`)."""
    import scipy.integrate
    return getattr(scipy.integrate, method)


def _power(method) -> int:
    """The size of a step's interpolant: the powers of x in RK23's and RK45's dense
    output, the rows F of DOP853's."""
    if method == "DOP853":
        from scipy.integrate._ivp import dop853_coefficients as dc
        return dc.INTERPOLATOR_POWER
    return _scipy_class(method).P.shape[1]


class Solver:
    """The C solve of one system by one method: `scalar` is the `Scalarized` graph of
    its right-hand side ``rhs(y, t, *leaves)`` (y flat, n numbers; t a scalar; the
    leaves' elements after them), or with `batch` (a `Batch`) of one copy of a system
    made of many.  Calling it solves; `rhs` evaluates the right-hand side alone (to check
    the code against the function it was traced from).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.codegen.scalarize import scalarize
        >>> from wengert.codegen.c import CompilerNotFound
        >>> g = wg.trace(lambda y, t, k: -k * y, np.ones(1), 0.0, 0.5)
        >>> try:
        ...     found = Solver(scalarize(g), "RK45")(np.ones(1), 0.0, 1.0, [0.5], [1.0],
        ...                                       rtol=1e-10, atol=1e-12)
        ...     print(round(found.y[0, 0], 8), round(np.exp(-0.5), 8))
        ... except CompilerNotFound:
        ...     print(0.60653066, 0.60653066)
        0.60653066 0.60653066
    """

    def __init__(self, scalar, method, events=None, batch=None):
        if method not in METHODS:
            raise ValueError(f"the C solver runs {', '.join(METHODS)}, not {method!r}")
        self.method = method
        self.n_events = 0 if events is None else len(events.graph.outputs)
        if batch is None:
            self.n = int(np.prod(scalar.in_shapes[0], dtype=np.int64))
            self.n_leaves = len(scalar.graph.inputs) - self.n - 1
            rhs = function_source(scalar, "wg_rhs")
        else:
            if events is not None:
                raise ValueError("a batched C solver locates no events")
            self.n, self.n_leaves = batch.n, batch.n_leaves
            rhs = function_source(scalar, "wg_rhs_one") + batch.source("wg_rhs_one",
                                                                       "wg_rhs")
        source = (rhs + (_NO_EVENTS if events is None else
                         function_source(events, "wg_events")) +
                  tableau_source(method) + _DRIVER)
        self.source = source
        lib = library(source)
        # the loop is called holding the GIL (PyDLL), so that it may ask Python whether
        # Ctrl-C was pressed; the right-hand side alone goes through lib (CDLL)
        held = ctypes.PyDLL(lib._name)
        self._solve = held.wg_solve
        self._solve.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_double, _DOUBLES,
                                _DOUBLES, ctypes.c_long, _DOUBLES, ctypes.c_long, _DOUBLES,
                                _DOUBLES, ctypes.c_double, ctypes.c_double, ctypes.c_int,
                                ctypes.c_int, _DOUBLES, _DOUBLES, ctypes.c_void_p,
                                ctypes.POINTER(_Out)]
        self._solve.restype = ctypes.c_int
        self._free = lib.wg_free
        self._free.argtypes = [ctypes.POINTER(_Out)]
        self._free.restype = None
        self._chain = held.wg_chain
        self._chain.argtypes = [ctypes.c_int, ctypes.c_long, _DOUBLES, _DOUBLES, _DOUBLES,
                                _DOUBLES, ctypes.c_long, _DOUBLES, _DOUBLES, ctypes.c_double,
                                ctypes.c_void_p, _DOUBLES, ctypes.POINTER(ctypes.c_long),
                                ctypes.POINTER(ctypes.c_long)]
        self._chain.restype = ctypes.c_int
        self._rhs_at = lib.wg_rhs_at
        self._rhs_at.argtypes = [ctypes.c_int, ctypes.c_long, _DOUBLES, _DOUBLES, _DOUBLES,
                                 ctypes.c_long, _DOUBLES]
        self._rhs_at.restype = None
        self._rhs = lib.wg_rhs
        self._rhs.argtypes = [_DOUBLES, _DOUBLES]
        self._rhs.restype = None
        if self.n_events:
            self._events = lib.wg_events
            self._events.argtypes = [_DOUBLES, _DOUBLES]
            self._events.restype = None
        self.power = _power(method)

    def rhs(self, y, t, leaves):
        """The compiled right-hand side at (y, t)."""
        inputs = np.concatenate([np.ravel(y), [t], self._leaves(leaves)])
        out = np.empty(self.n)
        self._rhs(_pointer(inputs), _pointer(out))
        return out

    def events_at(self, y, t, leaves):
        """The compiled event functions at (y, t)."""
        inputs = np.concatenate([np.ravel(y), [t], self._leaves(leaves)])
        out = np.empty(self.n_events)
        self._events(_pointer(inputs), _pointer(out))
        return out

    def rhs_at(self, ys, ts, leaves):
        """The compiled right-hand side at the m points (ts[k], ys[k]): (m, n)."""
        ys = np.ascontiguousarray(ys, dtype=np.float64).reshape(-1, self.n)
        ts = np.ascontiguousarray(ts, dtype=np.float64).reshape(-1)
        flat = self._leaves(leaves)
        out = np.empty_like(ys)
        self._rhs_at(self.n, len(ts), _pointer(ys), _pointer(ts), _pointer(flat), flat.size,
                     _pointer(out))
        return out

    def chain(self, times, keep, add, leaves, rtol, atol, max_step=np.inf):
        """Solves one after another, solve k from times[k] to times[k + 1] starting at
        ``keep ? end[k - 1] + add[k] : add[k]`` (solve 0 at add[0]): the states where
        they end, (len(times) - 1, n), the evaluations of the right-hand side in all, and
        None, or (status, k) for the first that failed."""
        n = self.n
        times = np.ascontiguousarray(times, dtype=np.float64)
        keep = np.ascontiguousarray(keep, dtype=np.float64)
        add = np.ascontiguousarray(add, dtype=np.float64)
        flat = self._leaves(leaves)
        rtol, atol = _per_element(rtol, n), _per_element(atol, n)
        ends = np.empty((len(times) - 1, n))
        nfev, failed = ctypes.c_long(), ctypes.c_long()
        status = self._chain(n, len(times) - 1, _pointer(times), _pointer(keep),
                             _pointer(add), _pointer(flat), flat.size, _pointer(rtol),
                             _pointer(atol), float(max_step), _CHECK_SIGNALS,
                             _pointer(ends), ctypes.byref(nfev), ctypes.byref(failed))
        if status == -2:
            raise MemoryError("the C solver ran out of memory")
        return ends, int(nfev.value), (None if status == 0 else (status, failed.value))

    def _leaves(self, leaves):
        """The leaves' numbers, flat and contiguous, as the right-hand side reads them."""
        flat = [np.ravel(np.asarray(x, dtype=np.float64)) for x in leaves]
        flat = np.concatenate(flat) if flat else np.zeros(0)
        if flat.size != self.n_leaves:
            raise ValueError(f"the C solver's right-hand side reads {self.n_leaves} numbers "
                             f"besides y and t, given {flat.size}")
        return flat

    def __call__(self, y0, t0, tf, leaves, t_eval, rtol, atol, max_step=np.inf,
                 first_step=None, dense=False, events=None):
        """Solve from y(t0) = y0 to tf.  Returns an object with SciPy's fields t, y (n by
        len(t)), nfev, status (0, 1 for a terminal event, -1), message, t_events and
        y_events (for `events`), and `interpolants`: for `dense`, one (t_old, t, y_old,
        coefficients) per step, the coefficients as SciPy's dense output holds them (RK:
        Q, n × POWER; DOP853: F, POWER × n).  `events` is (max_events, direction), one
        number per event function of the solver: SciPy's occurrences before the solve
        ends (inf: never) and the direction of the crossings that count."""
        n, m = self.n, self.n_events
        y0 = np.ascontiguousarray(y0, dtype=np.float64).reshape(n)
        flat = self._leaves(leaves)
        rtol, atol = _per_element(rtol, n), _per_element(atol, n)
        evals = None if t_eval is None else np.ascontiguousarray(t_eval, dtype=np.float64)
        if m and events is None:
            raise ValueError(f"this C solver locates {m} events: give their max_events "
                             "and direction")
        limits, direction = (_per_element(x, m) for x in (events or (np.inf, 0.0)))
        out = _Out()
        try:
            # (Ctrl-C: the call raises KeyboardInterrupt, and the buffers are freed)
            status = self._solve(n, float(t0), float(tf), _pointer(y0), _pointer(flat),
                                 flat.size, _pointer(evals) if evals is not None else None,
                                 -1 if evals is None else evals.size, _pointer(rtol),
                                 _pointer(atol), float(max_step),
                                 0.0 if first_step is None else float(first_step),
                                 int(dense), m, _pointer(limits), _pointer(direction),
                                 _CHECK_SIGNALS, ctypes.byref(out))
            nfev = int(out.nfev)
            ts = _copy(out.t)
            ys = _copy(out.y).reshape(-1, n).T
            t_last = float(out.t_last)
            t_events = y_events = None
            if m:
                occurrences = _copy(out.events).reshape(-1, 2 + n)
                which = occurrences[:, 0].astype(int)
                t_events = [occurrences[which == e, 1] for e in range(m)]
                y_events = [occurrences[which == e, 2:] for e in range(m)]
            interpolants = []
            if dense:
                rec = _copy(out.dense).reshape(-1, 2 + n + n * self.power)
                shape = (self.power, n) if self.method == "DOP853" else (n, self.power)
                interpolants = [(r[0], r[1], r[2:2 + n], r[2 + n:].reshape(shape))
                                for r in rec]
        finally:
            self._free(ctypes.byref(out))
        if status == -2:
            raise MemoryError("the C solver ran out of memory for its output")
        if status == -4:                    # (SciPy's brentq's errors, in its words)
            raise ValueError("f(a) and f(b) must have different signs")
        if status == -5:
            raise RuntimeError("Failed to converge after 100 iterations.")
        found = _Found(ts, ys, nfev, status, interpolants)
        found.t_events, found.y_events, found.t_last = t_events, y_events, t_last
        return found


class Batch:
    """How the right-hand side of a system made of `size` copies of one system (a batch
    under `wg.vmap`, or the adjoint of one) reads the copies' inputs and writes their
    outputs, so that C runs the one system's code in a loop over the copies rather than
    straight-line code `size` times as long (whose compiling grows with it: 1000 copies
    of a 2-state system took 30 s, and past `C_MAX_OPERATIONS` could not be written).

    Copy b's k-th input is ``in[in_at[k] + b * in_step[k]]`` of the whole system's
    inputs (state, t, leaves, as `Solver` lays them out), and its i-th output goes to
    ``out[out_at[i] + b * out_step[i]]``; an output with step 0 (a cotangent of an
    argument the copies share) is the sum of the copies' outputs.  `n` and `n_leaves`
    are the whole system's sizes.

    Example:
        >>> b = Batch(3, in_at=[0, 6], in_step=[2, 0], out_at=[0], out_step=[2], n=6,
        ...           n_leaves=0)
        >>> print(b.source("one", "all").splitlines()[0])
        /* 3 copies of one: inputs and outputs by (start, stride) */
    """

    def __init__(self, size, in_at, in_step, out_at, out_step, n, n_leaves):
        self.size, self.n, self.n_leaves = int(size), int(n), int(n_leaves)
        self.in_at, self.in_step = np.asarray(in_at, int), np.asarray(in_step, int)
        self.out_at, self.out_step = np.asarray(out_at, int), np.asarray(out_step, int)

    def source(self, one, name) -> str:
        """C of ``void name(in, out)``: the copies' `one(in, out)` in a loop, each run of
        consecutive numbers copied by one memcpy."""
        m, k = len(self.in_at), len(self.out_at)
        lines = [f"/* {self.size} copies of {one}: inputs and outputs by (start, stride) */",
                 "#include <string.h>",
                 f"void {name}(const double *restrict in, double *restrict out)", "{",
                 f"    double one_in[{m}];"]
        outs = _runs(self.out_at, self.out_step)
        direct = len(outs) == 1 and outs[0][3] == k and outs[0][:3] == (0, 0, k)
        if not direct:
            lines += [f"    double one_out[{k}];"]
        lines += [f"    memset(out + {at}, 0, {length} * sizeof(double));"
                  for _, at, step, length in outs if step == 0]
        lines += [f"    for (long b = 0; b < {self.size}; b++) {{"]
        lines += [f"        memcpy(one_in + {j}, in + {at} + b * {step}, "
                  f"{length} * sizeof(double));"
                  for j, at, step, length in _runs(self.in_at, self.in_step)]
        if direct:              # (the copies' outputs side by side: written in place)
            lines += [f"        {one}(one_in, out + b * {k});"]
        else:
            lines += [f"        {one}(one_in, one_out);"]
            for j, at, step, length in outs:
                if step:
                    lines += [f"        memcpy(out + {at} + b * {step}, one_out + {j}, "
                              f"{length} * sizeof(double));"]
                else:
                    lines += [f"        for (int i = 0; i < {length}; i++) "
                              f"out[{at} + i] += one_out[{j} + i];"]
        return "\n".join(lines + ["    }", "}", ""])


def _runs(at, step):
    """(first index, start, stride, length) of each run of consecutive positions with one
    stride in the tables (at, step)."""
    runs = []
    for j, (a, s) in enumerate(zip(at.tolist(), step.tolist())):
        if runs and runs[-1][2] == s and runs[-1][1] + runs[-1][3] == a:
            runs[-1][3] += 1
        else:
            runs.append([j, a, s, 1])
    return [tuple(r) for r in runs]


class _Found:
    """A C solve's result, with the fields of SciPy's that wengert reads."""

    def __init__(self, t, y, nfev, status, interpolants):
        self.t, self.y, self.nfev, self.status = t, y, nfev, status
        self.njev = self.nlu = 0
        self.message = MESSAGES[status]
        self.interpolants = interpolants
        self.t_events = self.y_events = None


#: Python's signal check, for the C loop (see wg_solve).
_CHECK_SIGNALS = ctypes.cast(ctypes.pythonapi.PyErr_CheckSignals, ctypes.c_void_p).value


def _per_element(tol, n):
    """A tolerance as n contiguous doubles."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(tol, np.float64), (n,)))


def _pointer(a):
    return a.ctypes.data


def _copy(buf):
    if not buf.len:
        return np.zeros(0)
    return np.ctypeslib.as_array(buf.data, shape=(buf.len,)).copy()
