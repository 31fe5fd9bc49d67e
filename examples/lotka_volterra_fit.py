"""Fit the four rates of a Lotka–Volterra predator–prey model to noisy counts.

Prey x and predators y follow

    x' = α x - β x y          (prey grow, and are eaten)
    y' = δ x y - γ y          (predators grow by eating, and die)

We observe both populations at 30 times with 5% multiplicative noise and recover
(α, β, γ, δ) by minimising the squared error of the log-populations.  The model is solved
by `wengert.scipy.integrate.odeint` (SciPy's LSODA); its gradient with respect to the
rates comes from the adjoint method, one backward solve whatever the number of
parameters, and drives SciPy's BFGS.

    python examples/lotka_volterra_fit.py
"""
import numpy as np
from scipy.optimize import minimize

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.integrate import odeint

TRUE = {"alpha": 1.0, "beta": 0.1, "gamma": 1.5, "delta": 0.075}
Y0 = np.array([10.0, 5.0])                      # prey, predators at t = 0
TIMES = np.linspace(0.0, 15.0, 31)


def predator_prey(state, t, rates):
    prey, pred = state[0], state[1]
    alpha, beta, gamma, delta = rates[0], rates[1], rates[2], rates[3]
    return [alpha * prey - beta * prey * pred, delta * prey * pred - gamma * pred]


def simulate(log_rates, times=TIMES):
    """Populations at `times` for rates exp(log_rates) (logarithms keep them positive)."""
    return odeint(predator_prey, Y0, times, args=(wnp.exp(log_rates),),
                  rtol=1e-8, atol=1e-8)


def loss(log_rates, observed):
    """Mean squared error of the log-populations after t = 0."""
    return wnp.mean((wnp.log(simulate(log_rates)[1:]) - wnp.log(observed[1:])) ** 2)


def observe(seed=0, noise=0.05):
    """Synthetic counts: the true model's populations with multiplicative noise."""
    rng = np.random.default_rng(seed)
    clean = simulate(np.log(list(TRUE.values())))
    return clean * np.exp(noise * rng.normal(size=clean.shape))


def fit(observed, guess, steps=100):
    """BFGS on the log-rates, with the loss and its adjoint gradient from wengert."""
    value_and_grad = wg.value_and_grad(loss)
    history, last = [], {}

    def objective(log_rates):
        last["value"], last["grad"] = value_and_grad(log_rates, observed)
        return last["value"], last["grad"]

    def report(log_rates):          # after each iteration (its last evaluation was there)
        history.append(last["value"])
        rates = ", ".join(f"{r:.4f}" for r in np.exp(log_rates))
        print(f"iteration {len(history):2d}: loss {last['value']:.6f}  "
              f"|grad| {np.linalg.norm(last['grad']):.2e}  rates ({rates})")

    result = minimize(objective, np.log(guess), jac=True, method="BFGS", callback=report,
                      options={"maxiter": steps, "gtol": 1e-8})
    return result.x, history


def main():
    observed = observe()
    guess = [1.5, 0.15, 1.0, 0.05]              # each rate 30-50% off
    log_rates, history = fit(observed, guess)
    fitted = dict(zip(TRUE, np.exp(log_rates)))
    print(f"{len(history)} BFGS iterations, final loss {loss(log_rates, observed):.6f}")
    for name, value in fitted.items():
        print(f"{name:>5} = {value:.4f}   (true {TRUE[name]:.4f}, first guess "
              f"{guess[list(TRUE).index(name)]:.4f})")
    return fitted


if __name__ == "__main__":
    main()
