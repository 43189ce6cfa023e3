"""The losses: each one is one :class:`Loss` in :data:`LOSSES`, the only place it is named.

A loss holds everything the library needs of it: its task, how a classifier
encodes two classes, whether it has the parameter ``loss_threshold``, its
residual ``r = d loss / d z`` (the derivative in the margins ``z``) in two
forms, and what output perturbation needs of a smooth loss. The two forms:

- compiled (Numba): ``value(z, target, threshold)`` with one output, and
  ``row(margins, target, threshold, out)`` with K > 1 outputs. The kernels
  take a loss as an integer code (:meth:`Loss.kernel_code`, given out by
  :data:`LOSSES` in order) and call :func:`single_output_residual` or
  :func:`multiclass_residual`, whose compiled dispatch on the code is built
  from :data:`LOSSES` (:func:`_dispatch`): no kernel names a loss;
- vectorised (array API): ``(xp, margins, y, threshold) -> residuals``,
  called through :func:`loss_derivative` by the array API trainer and, on
  NumPy arrays, by output perturbation's descent and the audit.

The tests compare both forms with plain NumPy oracles (``tests/oracles.py``).
Target encodings: binary classification, ``y`` in the loss's
``binary_targets``; several outputs, the class index 0 .. K-1 (as float);
regression, the target value.
"""

import dataclasses
import math
import typing

import numpy as np
from array_api_compat import array_namespace
from numba import njit
from numba.extending import overload

from .._utils import FASTMATH

__all__ = [
    "LOSSES",
    "Loss",
    "NON_SMOOTH_LOSSES",
    "SMOOTH_LOSSES",
    "CLASSIFICATION_LOSSES",
    "REGRESSION_LOSSES",
    "loss_code",
    "loss_derivative",
    "multiclass_residual",
    "residual",
    "residual_norms_at_zero",
    "single_output_residual",
]


# Compiled residuals. One output: a function of the margin alone, on scalars
# (the narrow kernels call it once per row, without an array).

@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _log_loss_binary_value(z, target, threshold):
    if z >= 0.0:
        probability = 1.0 / (1.0 + math.exp(-z))
    else:
        e = math.exp(z)
        probability = e / (1.0 + e)
    return probability - target


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _log_loss_multinomial_row(margins, target, threshold, out):
    # np.intp and comparisons rather than int(), max() and min(): the same
    # results without compiling their generic forms (seconds of a first fit).
    label = np.intp(target)
    top = margins[0]
    for k in range(1, margins.shape[0]):
        if margins[k] > top:
            top = margins[k]
    total = 0.0
    for k in range(margins.shape[0]):
        out[k] = math.exp(margins[k] - top)
        total += out[k]
    for k in range(margins.shape[0]):
        out[k] /= total
    out[label] -= 1.0


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _hinge_binary_value(z, target, threshold):
    return -target if target * z < 1.0 else 0.0


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _hinge_crammer_singer_row(margins, target, threshold, out):
    label = np.intp(target)
    rival = -1
    for k in range(margins.shape[0]):
        out[k] = 0.0
        if k != label and (rival < 0 or margins[k] > margins[rival]):
            rival = k
    if margins[label] - margins[rival] < 1.0:
        out[label] = -1.0
        out[rival] = 1.0


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _squared_error_value(z, target, threshold):
    return z - target


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _huber_value(z, target, threshold):
    value = z - target
    if -threshold > value:
        value = -threshold
    if threshold < value:
        value = threshold
    return value


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _epsilon_insensitive_value(z, target, threshold):
    diff = z - target
    if diff > threshold:
        return 1.0
    if diff < -threshold:
        return -1.0
    return 0.0


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _squared_hinge_binary_value(z, target, threshold):
    # d/dz max(0, 1 - y z)^2 = -2 y max(0, 1 - y z), y in {-1, +1}.
    slack = 1.0 - target * z
    return -2.0 * target * slack if slack > 0.0 else 0.0


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _squared_hinge_one_vs_rest_row(margins, target, threshold, out):
    # Output k is a binary squared hinge with target +1 for the label, -1 else.
    label = np.intp(target)
    for k in range(margins.shape[0]):
        sign = 1.0 if k == label else -1.0
        slack = 1.0 - sign * margins[k]
        out[k] = -2.0 * sign * slack if slack > 0.0 else 0.0


# Array API residuals: margins (b, K) and targets (b,) -> residuals (b, K).

def _log_loss_binary_array(xp, margins, y, threshold):
    z = margins[:, 0]
    # exp of -|z| only: no overflow, and the same expit as the kernel.
    e = xp.exp(-xp.abs(z))
    probability = xp.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return (probability - y)[:, None]


def _is_label(xp, margins, y):
    classes = xp.arange(margins.shape[1], device=margins.device)
    return xp.astype(y, xp.int64)[:, None] == classes[None, :]


def _log_loss_multinomial_array(xp, margins, y, threshold):
    shifted = xp.exp(margins - xp.max(margins, axis=1, keepdims=True))
    probabilities = shifted / xp.sum(shifted, axis=1, keepdims=True)
    return probabilities - xp.astype(_is_label(xp, margins, y), margins.dtype)


def _hinge_binary_array(xp, margins, y, threshold):
    z = margins[:, 0]
    return xp.where(y * z < 1.0, -y, xp.zeros_like(z))[:, None]


def _hinge_crammer_singer_array(xp, margins, y, threshold):
    is_label = _is_label(xp, margins, y)
    classes = xp.arange(margins.shape[1], device=margins.device)
    minus_inf = xp.asarray(-math.inf, dtype=margins.dtype, device=margins.device)
    others = xp.where(is_label, minus_inf, margins)
    # argmax returns the first maximum, as the kernel's strict comparison.
    is_rival = xp.argmax(others, axis=1)[:, None] == classes[None, :]
    label_margin = xp.sum(xp.where(is_label, margins, xp.zeros_like(margins)), axis=1)
    violated = label_margin - xp.max(others, axis=1) < 1.0
    step = xp.astype(is_rival, margins.dtype) - xp.astype(is_label, margins.dtype)
    return xp.where(violated[:, None], step, xp.zeros_like(margins))


def _squared_error_array(xp, margins, y, threshold):
    return (margins[:, 0] - y)[:, None]


def _huber_array(xp, margins, y, threshold):
    return xp.clip(margins[:, 0] - y, min=-threshold, max=threshold)[:, None]


def _epsilon_insensitive_array(xp, margins, y, threshold):
    diff = margins[:, 0] - y
    return xp.where(xp.abs(diff) > threshold, xp.sign(diff), xp.zeros_like(diff))[:, None]


def _squared_hinge_binary_array(xp, margins, y, threshold):
    z = margins[:, 0]
    return (-2.0 * y * xp.clip(1.0 - y * z, min=0.0))[:, None]


def _squared_hinge_one_vs_rest_array(xp, margins, y, threshold):
    signs = 2.0 * xp.astype(_is_label(xp, margins, y), margins.dtype) - 1.0
    return -2.0 * signs * xp.clip(1.0 - signs * margins, min=0.0)


# Output perturbation's constants: (x_norm, n_outputs, threshold,
# weight_norm_bound, target_bound) -> (R, L_loss).

def _log_loss_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # |sigmoid(z) - y| <= 1 and sigmoid' <= 1/4; ||softmax(z) - onehot(y)||^2
    # <= 2 (1 - p_y)^2 <= 2 and the softmax Hessian diag(p) - p p^T has
    # eigenvalues at most 1/2.
    if n_outputs == 1:
        return x_norm, x_norm**2 / 4.0
    return math.sqrt(2.0) * x_norm, x_norm**2 / 2.0


def _huber_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # The derivative is clipped to [-h, h]; the curvature is at most 1.
    return threshold * x_norm, x_norm**2


def _squared_error_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # The residual w . x - y is at most W X + Y while ||(W, b)|| <= W and |y| <= Y.
    return (weight_norm_bound * x_norm + target_bound) * x_norm, x_norm**2


def _squared_hinge_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # |r_k| = 2 max(0, 1 - t_k z_k) <= 2 (1 + |z_k|), so ||r|| <= 2 (sqrt(K) +
    # ||z||) <= 2 (sqrt(K) + W X) while ||(W, b)|| <= W; the curvature in
    # each output is at most 2.
    return 2.0 * (math.sqrt(n_outputs) + weight_norm_bound * x_norm) * x_norm, 2.0 * x_norm**2


def _is_threshold(threshold):
    return threshold


def _one(threshold):
    return 1.0


@dataclasses.dataclass(frozen=True)
class Loss:
    """One loss, as every part of the library sees it.

    Attributes
    ----------
    name : str
        The estimators' ``loss`` value.
    task : {"classification", "regression"}
    value : compiled function
        ``(z, target, threshold) -> r``: the residual with one output.
    array_residual : callable
        ``(xp, margins, y, threshold) -> residuals`` with one output.
    row : compiled function or None
        ``(margins, target, threshold, out)``: the residual with K > 1
        outputs (multinomial, Crammer-Singer, one-vs-rest), None for a
        regression loss.
    multiclass_array_residual : callable or None
        The array residual with K > 1 outputs.
    binary_targets : tuple of two floats or None
        How a classifier encodes its two classes for this loss.
    uses_threshold : bool
        Whether the loss has the parameter ``loss_threshold`` (its kink).
    constants : callable or None
        For a smooth loss, ``(x_norm, n_outputs, threshold, weight_norm_bound,
        target_bound) -> (R, L_loss)``: a bound on one row's loss gradient and
        on the curvature of its loss, for rows of norm at most ``x_norm``
        (output perturbation adds ``alpha`` to L). None for a loss that is not
        smooth (its derivative jumps).
    noise_free_step : float
        The step length ``eta0 * C`` of a noise-free ``eta0="auto"`` fit
        (``_defaults.resolve_eta0``): long where the curvature is small
        (separable classes want large weights), shorter where long steps
        would oscillate.
    needs_weight_bound : bool
        Whether ``R`` holds only for weights inside a public ball (the
        gradient grows with the margin): output perturbation then needs
        ``weight_norm_bound`` (and, for a regression loss, ``target_bounds``).
    probabilistic : bool
        Whether the margins are log-odds, so a classifier can predict
        probabilities (``predict_proba``).
    far_residual : callable
        ``threshold -> |r|``: a lower bound on a regression residual's size
        once the margin is far from the target (the audit's canaries).
    code, multiclass_code : int, int or None
        The kernels' codes, given by :data:`LOSSES` (leave them out).
    """

    name: str
    task: str
    value: typing.Callable
    array_residual: typing.Callable
    row: typing.Optional[typing.Callable] = None
    multiclass_array_residual: typing.Optional[typing.Callable] = None
    binary_targets: typing.Optional[tuple] = None
    uses_threshold: bool = False
    constants: typing.Optional[typing.Callable] = None
    noise_free_step: float = 1.0
    needs_weight_bound: bool = False
    probabilistic: bool = False
    far_residual: typing.Callable = _one
    code: int = -1
    multiclass_code: typing.Optional[int] = None

    @property
    def smooth(self):
        """Whether the loss has a Lipschitz derivative (output perturbation needs it)."""
        return self.constants is not None

    def kernel_code(self, n_outputs=1):
        """The kernels' code for a model with ``n_outputs`` outputs."""
        if n_outputs > 1 and self.multiclass_code is not None:
            return self.multiclass_code
        return self.code

    def threshold(self, estimator):
        """The loss's parameter as the kernels take it (0 for a loss without one)."""
        return float(estimator.loss_threshold) if self.uses_threshold else 0.0


def _registry(*losses):
    """``name -> Loss``, each loss given its codes: ``2 i`` (one output), ``2 i + 1``."""
    return {loss.name: dataclasses.replace(
        loss, code=2 * i, multiclass_code=None if loss.row is None else 2 * i + 1)
        for i, loss in enumerate(losses)}


LOSSES = _registry(
    Loss("log_loss", "classification", _log_loss_binary_value, _log_loss_binary_array,
         _log_loss_multinomial_row, _log_loss_multinomial_array,
         binary_targets=(0.0, 1.0), constants=_log_loss_constants, noise_free_step=4.0,
         probabilistic=True),
    Loss("hinge", "classification", _hinge_binary_value, _hinge_binary_array,
         _hinge_crammer_singer_row, _hinge_crammer_singer_array, binary_targets=(-1.0, 1.0),
         noise_free_step=4.0),
    # Curvature 2 per output: a step of eta0 C = 0.5 does not oscillate.
    Loss("squared_hinge", "classification", _squared_hinge_binary_value,
         _squared_hinge_binary_array, _squared_hinge_one_vs_rest_row,
         _squared_hinge_one_vs_rest_array, binary_targets=(-1.0, 1.0),
         constants=_squared_hinge_constants, needs_weight_bound=True, noise_free_step=0.5),
    Loss("squared_error", "regression", _squared_error_value, _squared_error_array,
         constants=_squared_error_constants, needs_weight_bound=True),
    Loss("huber", "regression", _huber_value, _huber_array, uses_threshold=True,
         constants=_huber_constants, far_residual=_is_threshold),
    Loss("epsilon_insensitive", "regression", _epsilon_insensitive_value,
         _epsilon_insensitive_array, uses_threshold=True),
)
CLASSIFICATION_LOSSES = tuple(name for name, loss in LOSSES.items()
                              if loss.task == "classification")
REGRESSION_LOSSES = tuple(name for name, loss in LOSSES.items() if loss.task == "regression")
SMOOTH_LOSSES = tuple(name for name, loss in LOSSES.items() if loss.smooth)
NON_SMOOTH_LOSSES = tuple(name for name, loss in LOSSES.items() if not loss.smooth)
# Each kernel code's array residual.
_ARRAY_RESIDUALS = {
    code: function
    for loss in LOSSES.values()
    for code, function in ((loss.code, loss.array_residual),
                           (loss.multiclass_code, loss.multiclass_array_residual))
    if code is not None
}


# The compiled dispatch on a code, built from LOSSES when a kernel is typed:
# ``if code == c0: f0(...) elif code == c1: ...``, ending in ``fallback``.
# LLVM inlines the chain, so a kernel runs the same branches as a
# hand-written ``if`` chain and is cached on disk like one.

def _chain(forms, fallback):
    if not forms:
        return fallback
    (form_code, form), rest = forms[0], _chain(forms[1:], fallback)

    @njit(fastmath=FASTMATH, nogil=True)
    def step(code, *args):
        if code == form_code:
            return form(*args)
        return rest(code, *args)
    return step


@njit(fastmath=FASTMATH, nogil=True)
def _no_single_output_form(code, z, target, threshold):
    # NaN is dropped by the clip: a code without this form fails closed.
    return math.nan


@njit(fastmath=FASTMATH, nogil=True)
def _no_multiclass_form(code, margins, target, threshold, out):
    for k in range(out.shape[0]):
        out[k] = math.nan


def _single_output_dispatch(code, z, target, threshold):
    raise NotImplementedError("compiled only")


def _multiclass_dispatch(code, margins, target, threshold, out):
    raise NotImplementedError("compiled only")


@overload(_single_output_dispatch)
def _type_single_output_dispatch(code, z, target, threshold):
    chain = _chain(tuple((loss.code, loss.value) for loss in LOSSES.values()),
                   _no_single_output_form)
    return lambda code, z, target, threshold: chain(code, z, target, threshold)


@overload(_multiclass_dispatch)
def _type_multiclass_dispatch(code, margins, target, threshold, out):
    chain = _chain(tuple((loss.multiclass_code, loss.row) for loss in LOSSES.values()
                         if loss.row is not None), _no_multiclass_form)
    return lambda code, margins, target, threshold, out: chain(
        code, margins, target, threshold, out)


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def single_output_residual(code, z, target, threshold):
    """``d loss / d z`` of the one-output loss ``code`` at margin ``z`` (scalars).

    The narrow kernels' entry (no array per row); NaN for a code without a
    one-output form, which the clip then drops.
    """
    return _single_output_dispatch(code, z, target, threshold)


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def multiclass_residual(code, margins, target, threshold, out):
    """Write the residual of the loss ``code`` with K > 1 outputs into ``out``.

    NaN for a code without a multiclass form (the clip drops it, so it fails
    closed instead of leaving ``out`` as it was).
    """
    _multiclass_dispatch(code, margins, target, threshold, out)


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def residual(code, margins, target, threshold, out):
    """Write ``r = d loss / d z`` for one row into ``out`` (length K).

    ``code`` is :func:`loss_code`'s, ``threshold`` the loss's parameter (0
    without one). A kernel that only ever has several outputs calls
    :func:`multiclass_residual` and compiles only the multiclass forms.
    """
    if margins.shape[0] == 1:
        out[0] = single_output_residual(code, margins[0], target, threshold)
    else:
        multiclass_residual(code, margins, target, threshold, out)


def loss_code(loss, n_outputs=1):
    """Integer code of a loss for the compiled kernels.

    Parameters
    ----------
    loss : str
        A key of :data:`LOSSES`.
    n_outputs : int, default=1
        Number of model outputs ``K``; a classification loss with ``K > 1``
        takes its multiclass form.

    Returns
    -------
    code : int
    """
    if loss not in LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; expected one of {sorted(LOSSES)}.")
    return LOSSES[loss].kernel_code(n_outputs)


def loss_derivative(xp, code, margins, y, threshold=0.0):
    """``r = d loss / d z`` row by row, in the namespace of ``margins``.

    The vectorised form of :func:`residual` (the tests compare both with
    their NumPy oracle). NumPy arrays work too (``xp=None`` takes the arrays'
    own namespace).

    Parameters
    ----------
    xp : namespace or None
    code : int
        Loss code from :func:`loss_code`.
    margins : array of shape (b, K)
    y : array of shape (b,)
        Encoded targets, in the dtype of ``margins``.
    threshold : float, default=0.0
        Huber threshold or epsilon-insensitive margin.

    Returns
    -------
    residuals : array of shape (b, K)
    """
    if xp is None:
        xp = array_namespace(margins)
    if code not in _ARRAY_RESIDUALS:
        raise ValueError(f"Unknown loss code {code!r}.")
    return _ARRAY_RESIDUALS[code](xp, margins, y, threshold)


def residual_norms_at_zero(code, y, n_outputs, threshold=0.0):
    """``||d loss(0, y_i) / d z||`` for every row: the residuals' norms at zero weights.

    Parameters
    ----------
    code : int
        Loss code from :func:`loss_code`.
    y : ndarray of shape (n_rows,)
        Encoded targets.
    n_outputs : int
        K.
    threshold : float, default=0.0

    Returns
    -------
    norms : ndarray of shape (n_rows,)
        Equal to the row norms of :func:`loss_derivative` at zero margins.
    """
    y = np.asarray(y, dtype=np.float64)
    if n_outputs > 1:
        # With several outputs the encoded target is the class index, and the
        # residual at zero margins depends on it alone: K residuals instead
        # of an (n, K) softmax.
        labels = np.arange(n_outputs, dtype=np.float64)
        per_label = np.linalg.norm(loss_derivative(
            None, code, np.zeros((n_outputs, n_outputs)), labels, threshold), axis=1)
        return per_label[y.astype(np.intp)]
    return np.abs(np.asarray(loss_derivative(
        None, code, np.zeros((len(y), 1)), y, threshold))[:, 0])
