"""Fit an electrochemical cell's equivalent circuit to its impedance spectrum.

A Randles cell: a solution resistance R_s in series with a charge-transfer resistance
R_ct parallel to a double-layer capacitance C. Its impedance at angular frequency ω is
complex:

    Z(ω) = R_s + R_ct / (1 + i ω R_ct C)

The parameters are real (and positive: we fit their logarithms); the model and the data
are complex. wengert differentiates through the complex intermediate values and hands back
a real gradient and a real Hessian, so the fit can take Newton steps.

    python examples/impedance_fit.py
"""
import numpy as np

import wengert as wg
import wengert.numpy as wnp

TRUE = {"R_s": 12.0, "R_ct": 85.0, "C": 2.2e-5}       # ohm, ohm, farad
OMEGA = 2 * np.pi * np.logspace(-1, 5, 40)              # 0.1 Hz to 100 kHz


def impedance(log_params, omega):
    """The Randles cell's complex impedance; log_params = log(R_s, R_ct, C)."""
    r_s, r_ct, c = wnp.exp(log_params)
    return r_s + r_ct / (1 + 1j * omega * r_ct * c)


def loss(log_params, omega, measured):
    """Mean squared relative error |Z - Z_measured|² / |Z_measured|²: a real number."""
    residual = (impedance(log_params, omega) - measured) / wnp.abs(measured)
    return wnp.mean(wnp.abs(residual) ** 2)


def measure(seed=0, noise=0.01):
    """A synthetic spectrum: the true cell's impedance with 1% complex noise."""
    rng = np.random.default_rng(seed)
    z = impedance(np.log(list(TRUE.values())), OMEGA)
    return z * (1 + noise * (rng.normal(size=z.shape) + 1j * rng.normal(size=z.shape)))


def first_guess(omega, measured):
    """What one reads off the spectrum: R_s at the highest frequency, R_s + R_ct at the
    lowest, and C from the frequency where -Im Z peaks (ω = 1/(R_ct C))."""
    r_s = measured.real[-1]
    r_ct = measured.real[0] - r_s
    peak = omega[np.argmax(-measured.imag)]
    return np.log([r_s, r_ct, 1 / (peak * r_ct)])


def fit(omega, measured, steps=50):
    """Damped Newton (Levenberg's damping) on the log-parameters from the first guess; the
    gradient and the Hessian come from wengert, through the complex model."""
    theta = first_guess(omega, measured)
    gradient, hessian = wg.grad(loss), wg.hessian(loss)
    damping = 1e-3
    for step in range(1, steps + 1):
        g, h = gradient(theta, omega, measured), hessian(theta, omega, measured)
        if np.max(np.abs(g)) < 1e-13:
            break
        now = loss(theta, omega, measured)
        while True:                 # more damping until the step goes downhill
            trial = theta - np.linalg.solve(h + damping * np.eye(3), g)
            if loss(trial, omega, measured) < now or damping > 1e12:
                break
            damping *= 10
        theta, damping = trial, damping / 10
    return theta, step


def main():
    measured = measure()
    theta, steps = fit(OMEGA, measured)
    fitted = dict(zip(TRUE, np.exp(theta)))
    print(f"Newton steps: {steps}, final loss {loss(theta, OMEGA, measured):.3e}")
    for name, value in fitted.items():
        print(f"{name:>5} = {value:.4g}   (true {TRUE[name]:.4g})")
    return fitted


if __name__ == "__main__":
    main()
