"""Optimizers: the update applied to the smoothed noisy gradient (post-processing).

Every update is a function of the released noisy gradients only, so an
optimizer changes nothing in the accounting (DP-LSAdam is DP-LSSGD whose
smoothed noisy gradient goes through Adam). One class per optimizer holds its
settings (estimator parameters, so a search reaches ``optimizer__beta1``),
their check, its ``eta0="auto"`` rule and its update on NumPy arrays (in
place, compiled) and on array API arrays; :class:`OptimizerRun` holds one
fit's state. How to add one: docs/developers.rst.
"""

import math

import numpy as np
from numba import njit
from sklearn.base import BaseEstimator

from .._utils import CONTRACT_ONLY

__all__ = [
    "AdaGrad",
    "Adam",
    "Momentum",
    "OPTIMIZERS",
    "Optimizer",
    "OptimizerRun",
    "SGD",
    "adagrad_update",
    "adam_update",
    "apply_weight_decay",
    "check_optimizer",
    "compiled_update",
    "MOMENTUM_CODE",
    "SGD_CODE",
    "optimizer_error",
    "momentum_update",
    "sgd_update",
]


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
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


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def sgd_update(params, gradient_sum, step_size):
    """``params -= step_size * gradient_sum`` in place (``step_size``: eta over the batch size)."""
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        for j in range(row.shape[0]):
            row[j] -= step_size * grad_row[j]


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def momentum_update(params, gradient_sum, velocity, step_size, momentum):
    """Heavy-ball momentum in place, no dampening: ``v = momentum v + g; params -= step_size v``."""
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        vel_row = velocity[k]
        for j in range(row.shape[0]):
            vel_row[j] = momentum * vel_row[j] + grad_row[j]
            row[j] -= step_size * vel_row[j]


# Codes of the updates that compiled runs of steps (``_steps``) apply
# themselves; an optimizer without one is stepped from Python.
SGD_CODE = 0
MOMENTUM_CODE = 1


@njit(cache=True, nogil=True)
def compiled_update(code, factor, params, gradient_sum, state, step_size):
    """The update of optimizer ``code`` in place; ``factor``: its setting, ``state``: its state."""
    if code == MOMENTUM_CODE:
        momentum_update(params, gradient_sum, state, step_size, factor)
    else:
        sgd_update(params, gradient_sum, step_size)


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def adam_update(params, gradient_sum, first, second, learning_rate, inv_batch, beta1, beta2,
                epsilon, step):
    """One Adam step (Kingma and Ba, ICLR 2015) in place, on the mean gradient (``step`` from 1)."""
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


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def adagrad_update(params, gradient_sum, accumulator, learning_rate, inv_batch, epsilon):
    """One AdaGrad step (Duchi, Hazan and Singer, JMLR 2011) in place, on the mean gradient."""
    for k in range(params.shape[0]):
        row = params[k]
        grad_row = gradient_sum[k]
        acc_row = accumulator[k]
        for j in range(row.shape[0]):
            g = inv_batch * grad_row[j]
            acc_row[j] += g * g
            row[j] -= learning_rate * g / (math.sqrt(acc_row[j]) + epsilon)


def _check_fraction(value, name):
    """``value`` a real in [0, 1), else a ValueError naming ``name``."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value)
    if not ok or value < 0 or value >= 1:
        raise ValueError(f"{name} must be a real number in [0, 1); got {value!r}.")


def _check_positive(value, name):
    ok = isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value)
    if not ok or value <= 0:
        raise ValueError(f"{name} must be a positive real number; got {value!r}.")


class Optimizer(BaseEstimator):
    """Base class of the optimizers: settings, default step size and update.

    Subclasses set ``name`` and ``n_state`` and define :meth:`update` and
    :meth:`update_array`; they override :meth:`check` and
    :meth:`default_eta0` where their settings or step-size rule differ from
    plain SGD's.
    """

    #: The name the estimators' ``optimizer`` also accepts.
    name = None
    #: Number of state arrays of the parameters' shape.
    n_state = 0
    #: The code of ``compiled_update`` that applies this update inside a
    #: compiled run of steps; None: stepped from Python, one call a step.
    compiled_code = None

    def compiled_factor(self):
        """The setting ``compiled_update`` takes (0.0 when there is none)."""
        return 0.0

    def check(self):
        """Raise a ValueError naming the setting that is out of range."""

    def default_eta0(self, sgd_eta0, weight_noise, schedule):
        """The ``eta0="auto"`` of this optimizer.

        Parameters
        ----------
        sgd_eta0 : float
            Plain SGD's automatic ``eta0``.
        weight_noise : float
            The target of the noise accumulated on one weight over the run.
        schedule : ndarray of shape (n_steps,)
            The learning rate's shape over the steps (``eta_t / eta0``).

        Returns
        -------
        eta0 : float
        """
        return sgd_eta0

    def update(self, params, gradient_sum, state, learning_rate, inv_batch, n_updates):
        """One update of NumPy ``params`` in place (``n_updates`` counts from 1)."""
        raise NotImplementedError

    def update_array(self, xp, params, gradient_sum, state, learning_rate, inv_batch,
                     n_updates):
        """One update on array API arrays; returns ``(params, state)``."""
        raise NotImplementedError


class SGD(Optimizer):
    """Plain gradient descent: ``params -= (eta_t / b) g``, ``g`` the smoothed noisy sum.

    Examples
    --------
    >>> from sklearn_dplssgd import DPLSSGDClassifier, SGD
    >>> DPLSSGDClassifier(optimizer=SGD()).optimizer
    SGD()
    """

    name = "sgd"
    compiled_code = SGD_CODE

    def update(self, params, gradient_sum, state, learning_rate, inv_batch, n_updates):
        sgd_update(params, gradient_sum, learning_rate * inv_batch)

    def update_array(self, xp, params, gradient_sum, state, learning_rate, inv_batch,
                     n_updates):
        return params - (learning_rate * inv_batch) * gradient_sum, state


class Momentum(Optimizer):
    """Heavy-ball momentum: ``v = momentum v + g``, ``params -= (eta_t / b) v``.

    Parameters
    ----------
    momentum : float in [0, 1), default=0.9
        The factor of the previous velocity (scikit-learn's MLP and
        PyTorch's convention, no dampening).

    Notes
    -----
    The long-run step is ``eta0 / (1 - momentum)``, so the automatic ``eta0``
    is plain SGD's times ``1 - momentum``: the noise accumulated on the
    weights stays the same.
    """

    name = "momentum"
    n_state = 1
    compiled_code = MOMENTUM_CODE

    def compiled_factor(self):
        return float(self.momentum)

    def __init__(self, momentum=0.9):
        self.momentum = momentum

    def check(self):
        _check_fraction(self.momentum, "optimizer.momentum")

    def default_eta0(self, sgd_eta0, weight_noise, schedule):
        return sgd_eta0 * (1.0 - float(self.momentum))

    def update(self, params, gradient_sum, state, learning_rate, inv_batch, n_updates):
        momentum_update(params, gradient_sum, state[0], learning_rate * inv_batch,
                        float(self.momentum))

    def update_array(self, xp, params, gradient_sum, state, learning_rate, inv_batch,
                     n_updates):
        velocity = float(self.momentum) * state[0] + gradient_sum
        return params - (learning_rate * inv_batch) * velocity, [velocity]


class Adam(Optimizer):
    """Adam on the mean noisy gradient (DP-LSAdam; see also Hong, Wang and Zhou, FAccT 2022).

    Parameters
    ----------
    beta1, beta2 : float in [0, 1), default=0.9 and 0.999
        The decay rates of the first and second moments.
    epsilon : float > 0, default=1e-8
        The floor of the denominator.

    Notes
    -----
    Adam's step is about ``eta0`` per coordinate whatever the gradient's
    scale (the noise's own magnitude normalises it), so noise alone moves a
    weight by about ``eta0 ||s||_2`` over the run (``s`` the learning rate's
    shape): the automatic ``eta0`` sets that to the target weight noise.
    """

    name = "adam"
    n_state = 2

    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8):
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def check(self):
        _check_fraction(self.beta1, "optimizer.beta1")
        _check_fraction(self.beta2, "optimizer.beta2")
        _check_positive(self.epsilon, "optimizer.epsilon")

    def default_eta0(self, sgd_eta0, weight_noise, schedule):
        return weight_noise / float(np.linalg.norm(schedule))

    def update(self, params, gradient_sum, state, learning_rate, inv_batch, n_updates):
        adam_update(params, gradient_sum, state[0], state[1], learning_rate, inv_batch,
                    float(self.beta1), float(self.beta2), float(self.epsilon), n_updates)

    def update_array(self, xp, params, gradient_sum, state, learning_rate, inv_batch,
                     n_updates):
        beta1, beta2 = float(self.beta1), float(self.beta2)
        g = inv_batch * gradient_sum
        first = beta1 * state[0] + (1.0 - beta1) * g
        second = beta2 * state[1] + (1.0 - beta2) * (g * g)
        m_hat = first / (1.0 - beta1 ** n_updates)
        v_hat = second / (1.0 - beta2 ** n_updates)
        step = learning_rate * m_hat / (xp.sqrt(v_hat) + float(self.epsilon))
        return params - step, [first, second]


class AdaGrad(Optimizer):
    """AdaGrad on the mean noisy gradient: per-coordinate steps shrinking with the sum of squares.

    Parameters
    ----------
    epsilon : float > 0, default=1e-8
        The floor of the denominator.

    Notes
    -----
    ``G_t = sum_{u <= t} g_u**2`` and ``params -= eta_t g_t / (sqrt(G_t) +
    epsilon)``: with gradients of a steady scale (the noise's, under DP) step
    ``t`` moves a coordinate by about ``eta_t / sqrt(t)``, so noise alone
    moves a weight by about ``eta0 sqrt(sum_t s_t**2 / t)`` over the run; the
    automatic ``eta0`` sets that to the target weight noise.
    """

    name = "adagrad"
    n_state = 1

    def __init__(self, epsilon=1e-8):
        self.epsilon = epsilon

    def check(self):
        _check_positive(self.epsilon, "optimizer.epsilon")

    def default_eta0(self, sgd_eta0, weight_noise, schedule):
        steps = np.arange(1, len(schedule) + 1, dtype=np.float64)
        return weight_noise / math.sqrt(float(np.sum(np.square(schedule) / steps)))

    def update(self, params, gradient_sum, state, learning_rate, inv_batch, n_updates):
        adagrad_update(params, gradient_sum, state[0], learning_rate, inv_batch,
                       float(self.epsilon))

    def update_array(self, xp, params, gradient_sum, state, learning_rate, inv_batch,
                     n_updates):
        g = inv_batch * gradient_sum
        accumulator = state[0] + g * g
        step = learning_rate * g / (xp.sqrt(accumulator) + float(self.epsilon))
        return params - step, [accumulator]


#: The optimizers the estimators' ``optimizer`` accepts by name.
OPTIMIZERS = {cls.name: cls for cls in (SGD, Momentum, Adam, AdaGrad)}


def check_optimizer(optimizer):
    """The :class:`Optimizer` an ``optimizer`` value (a name or an instance) stands for, checked.

    An instance is returned as is, unmodified; a ValueError names what is wrong.
    """
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {tuple(OPTIMIZERS)} or an Optimizer; "
                             f"got {optimizer!r}.")
        optimizer = OPTIMIZERS[optimizer]()
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"optimizer must be one of {tuple(OPTIMIZERS)} or an Optimizer "
                         f"(SGD, Momentum, Adam, AdaGrad); got {type(optimizer).__name__}.")
    optimizer.check()
    return optimizer


def optimizer_error(value):
    """The ``optimizer`` constraint: a message, or None when valid."""
    try:
        check_optimizer(value)
    except ValueError as error:
        return "is not valid: " + str(error)
    return None


class OptimizerRun:
    """One fit's optimizer state, like ``params``; ``xp`` None: NumPy arrays updated in place.

    ``batch_size`` is the public expected batch size the noisy sum is divided by.
    """

    def __init__(self, optimizer, params, batch_size, xp=None):
        self.optimizer, self.xp = optimizer, xp
        self.inv_batch = 1.0 / batch_size
        self.n_updates = 0
        zeros = np.zeros_like if xp is None else xp.zeros_like
        self.state = [zeros(params) for _ in range(optimizer.n_state)]

    def step(self, params, gradient_sum, learning_rate):
        """Update ``params`` along the smoothed noisy gradient sum; return them."""
        self.n_updates += 1
        if self.xp is None:
            self.optimizer.update(params, gradient_sum, self.state, learning_rate,
                                  self.inv_batch, self.n_updates)
            return params
        params, self.state = self.optimizer.update_array(
            self.xp, params, gradient_sum, self.state, learning_rate, self.inv_batch,
            self.n_updates)
        return params
