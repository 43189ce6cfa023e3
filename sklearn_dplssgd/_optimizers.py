"""Optimizer steps applied to the smoothed noisy gradient (post-processing).

The training loop (:func:`sklearn_dplssgd._sgd.train_dp_lssgd`) gets the
noisy clipped gradient sum from :func:`~sklearn_dplssgd._kernels.noisy_clipped_gradient_sum`,
smooths it (:func:`~sklearn_dplssgd._kernels.smooth_rows`), applies the L2
weight decay (:func:`apply_weight_decay`) and then one optimizer update.
Every update here is a function of the noisy gradients only, so the choice
of optimizer changes nothing in the privacy accounting: DP-LSAdam is
DP-LSSGD whose smoothed noisy gradient goes through Adam.

Each update is a compiled kernel (arrays and scalars only) with a NumPy
oracle in the tests; :class:`Optimizer` holds an optimizer's state
between steps.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "OPTIMIZERS",
    "Optimizer",
    "adam_update",
    "apply_weight_decay",
    "momentum_update",
    "sgd_update",
]

OPTIMIZERS = ("sgd", "momentum", "adam")

# Only contractions (a * b + c in one instruction): no reassociation, so the
# kernels agree with their NumPy oracles to rounding.
_CONTRACT_ONLY = {"contract"}


@njit(cache=True, fastmath=_CONTRACT_ONLY, nogil=True)
def apply_weight_decay(params, shrink, n_penalized):
    """``params[:, :n_penalized] *= shrink`` in place (the L2 penalty's decay).

    The intercept column (index ``n_penalized``) is never penalised.
    """
    if shrink == 1.0:
        return
    for k in range(params.shape[0]):
        row = params[k]
        for j in range(n_penalized):
            row[j] *= shrink


@njit(cache=True, fastmath=_CONTRACT_ONLY, nogil=True)
def sgd_update(params, gradient_sum, step_size):
    """``params -= step_size * gradient_sum`` in place.

    ``step_size`` is the learning rate divided by the expected batch size,
    so that ``step_size * gradient_sum`` is the step along the mean gradient.
    """
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        for j in range(row.shape[0]):
            row[j] -= step_size * grad_row[j]


@njit(cache=True, fastmath=_CONTRACT_ONLY, nogil=True)
def momentum_update(params, gradient_sum, velocity, step_size, momentum):
    """Heavy-ball momentum, in place: ``v = momentum v + g; params -= step_size v``.

    ``g`` is the gradient sum; ``velocity`` has the shape of ``params``. This
    is scikit-learn's MLP / PyTorch's SGD convention (no dampening): the
    long-run step is ``step_size / (1 - momentum)`` times the gradient.
    """
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        vel_row = velocity[k]
        for j in range(row.shape[0]):
            vel_row[j] = momentum * vel_row[j] + grad_row[j]
            row[j] -= step_size * vel_row[j]


@njit(cache=True, fastmath=_CONTRACT_ONLY, nogil=True)
def adam_update(params, gradient_sum, first, second, learning_rate, inv_batch, beta1, beta2,
                epsilon, step):
    """One Adam step (Kingma and Ba, 2015) in place, on the mean gradient.

    ``g = inv_batch * gradient_sum``; ``first = beta1 first + (1 - beta1) g``;
    ``second = beta2 second + (1 - beta2) g**2``; then
    ``params -= learning_rate * m_hat / (sqrt(v_hat) + epsilon)`` with the
    bias corrections of step ``step`` (1-based).
    """
    correction1 = 1.0 - beta1 ** step
    correction2 = 1.0 - beta2 ** step
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        first_row = first[k]
        second_row = second[k]
        for j in range(row.shape[0]):
            g = inv_batch * grad_row[j]
            first_row[j] = beta1 * first_row[j] + (1.0 - beta1) * g
            second_row[j] = beta2 * second_row[j] + (1.0 - beta2) * g * g
            m_hat = first_row[j] / correction1
            v_hat = second_row[j] / correction2
            row[j] -= learning_rate * m_hat / (math.sqrt(v_hat) + epsilon)


class Optimizer:
    """An optimizer's settings and state over one fit.

    Parameters
    ----------
    name : {"sgd", "momentum", "adam"}
    shape : tuple
        Shape of the parameter matrix, ``(K, d + 1)``.
    dtype : numpy dtype
    batch_size : int
        The expected batch size b: the noisy sum is divided by it.
    momentum : float
    beta1, beta2, epsilon : float
        Adam's decay rates and its denominator's floor.
    """

    def __init__(self, name, shape, dtype, batch_size, momentum=0.9, beta1=0.9, beta2=0.999,
                 epsilon=1e-8):
        if name not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}.")
        self.name = name
        self.inv_batch = 1.0 / batch_size
        self.momentum = float(momentum)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.n_updates = 0
        self._first = np.zeros(shape, dtype=dtype) if name != "sgd" else None
        self._second = np.zeros(shape, dtype=dtype) if name == "adam" else None

    def step(self, params, gradient_sum, learning_rate):
        """Update ``params`` in place along the (smoothed) noisy gradient sum."""
        self.n_updates += 1
        if self.name == "sgd":
            sgd_update(params, gradient_sum, learning_rate * self.inv_batch)
        elif self.name == "momentum":
            momentum_update(params, gradient_sum, self._first,
                            learning_rate * self.inv_batch, self.momentum)
        else:
            adam_update(params, gradient_sum, self._first, self._second, learning_rate,
                        self.inv_batch, self.beta1, self.beta2, self.epsilon,
                        self.n_updates)
