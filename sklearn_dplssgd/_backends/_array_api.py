"""DP-LSSGD on array API arrays (PyTorch, CuPy, array-api-strict): training on their device.

Under ``sklearn.set_config(array_api_dispatch=True)`` the estimators train on
the device of any array scikit-learn's array API support handles: the NumPy
backend's loop in array API operations only (the clipped sum as two matrix
products, smoothing by FFT). The plan, the accountant, the Poisson batches and
the exact integer noise stay on the host.
"""

import contextlib
import math

import array_api_compat
import numpy as np
from sklearn import get_config

from .._training import loss_derivative, release_on_lattice, smoothing_eigenvalues, run_training
from ._kernels import NORM_SLACK, smooth_rows, smoothing_omega
from ._numpy import (
    check_chunk_batches, chunk_noise, poisson_batches, rounded_gaussian_noise, without_long_rows,
)
from ._row_norms import row_norms, scaled_row_norms

__all__ = [
    "device_of",
    "check_same_namespace",
    "ArrayApiTraining",
    "array_api_namespace",
    "clipped_residuals",
    "full_precision_products",
    "full_precision_switches",
    "initial_gradient_norms",
    "row_norms",
    "to_device",
    "to_numpy",
    "train_dp_lssgd_array_api",
    "wide_dtype",
    "without_autograd",
]


def array_api_namespace(X):
    """``(xp, device)`` of a non-NumPy array API input under dispatch, else None."""
    if not get_config()["array_api_dispatch"]:
        return None
    if not array_api_compat.is_array_api_obj(X) or array_api_compat.is_numpy_array(X):
        return None
    return array_api_compat.array_namespace(X), array_api_compat.device(X)


def without_autograd(X):
    """``X`` cut from PyTorch's autograd graph (the same memory); other arrays unchanged."""
    return X.detach() if array_api_compat.is_torch_array(X) else X


def to_numpy(array):
    """A NumPy copy, on the host, of an array of any namespace (others unchanged).

    Always a copy: moving a CPU tensor can share the user's memory.
    """
    if not array_api_compat.is_array_api_obj(array) or array_api_compat.is_numpy_array(array):
        return array
    if array_api_compat.is_torch_array(array):
        return np.array(array.detach().cpu().numpy(), copy=True)
    if array_api_compat.is_cupy_array(array):
        return array.get()
    # Any other namespace through DLPack, asking for a copy on the host.
    try:
        return np.from_dlpack(array, device="cpu", copy=True)
    except (TypeError, BufferError, ValueError, RuntimeError):
        return np.array(array, copy=True)


def to_device(array, xp, device):
    """A host array moved to ``xp`` on ``device`` (float64 down-cast where unsupported)."""
    host = np.asarray(array)
    if host.dtype == np.float64 and wide_dtype(xp, device) != xp.float64:
        host = host.astype(np.float32)
    return xp.asarray(host, device=device)


_WIDE_DTYPES = {}


def wide_dtype(xp, device):
    """float64 where the device has it (MPS has not), else float32."""
    key = (xp.__name__, str(device))
    if key not in _WIDE_DTYPES:
        floats = xp.__array_namespace_info__().dtypes(device=device, kind="real floating")
        _WIDE_DTYPES[key] = "float64" in floats
    return xp.float64 if _WIDE_DTYPES[key] else xp.float32


def check_same_namespace(X, fitted, *, attribute, method):
    """A ValueError unless ``X`` and ``fitted.<attribute>`` share namespace and device."""
    reference = getattr(fitted, attribute)
    if _namespace_and_device(X) != _namespace_and_device(reference):
        raise ValueError(
            f"Inputs passed to {type(fitted).__name__}.{method}() must use the same namespace "
            f"and the same device as those passed to fit(): {attribute} is a "
            f"{type(reference).__module__} array on {_namespace_and_device(reference)[1]}, X "
            f"a {type(X).__module__} object on {_namespace_and_device(X)[1]}.")


def _namespace_and_device(array):
    """The name of an array's namespace and its device, as text (lists and frames: NumPy's)."""
    if not array_api_compat.is_array_api_obj(array):
        array = np.empty(0)  # what validation makes of it: a NumPy array on the host
    return (array_api_compat.array_namespace(array).__name__,
            str(array_api_compat.device(array)))


def device_of(array):
    return array.device


def _norms_of_rows(xp, values):
    """The L2 norm of each row of a (b, K) array (``abs`` for K = 1, as the kernels).

    Scaled by each row's largest entry: in float32 the squares of entries near
    1e-23 are 0, and a plain norm would call such a residual 0.
    """
    if values.shape[1] == 1:
        return xp.abs(values[:, 0])
    return scaled_row_norms(xp, values)


def clipped_residuals(xp, residuals, feature_norms, clip_norm, dtype, weights=None):
    """``w_i r_i min(1, C / ||g_i||)`` with ``||g_i|| = ||r_i|| feature_norms_i``, as stored.

    The array form of :func:`._clipping.clipped_residual` (same order of
    operations, same check as stored in ``dtype``, same fail-closed rows).
    ``residuals`` (b, K), ``feature_norms`` and ``weights`` (b,) are in the wide
    dtype; the coefficients are returned in ``dtype``.
    """
    info = xp.finfo(dtype)
    largest, tiny = float(info.max), float(info.smallest_normal)
    residual_norm = _norms_of_rows(xp, residuals)
    # A NaN or negative feature norm is no norm: such a row contributes nothing.
    valid_norm = feature_norms >= 0
    positive = feature_norms > 0
    allowed = clip_norm / xp.where(positive, feature_norms, xp.ones_like(feature_norms))
    finite = xp.isfinite(residual_norm)
    clipped = finite & positive & (residual_norm > allowed)
    safe_norm = xp.where(clipped, residual_norm, xp.ones_like(residual_norm))
    values = xp.where(clipped[:, None], (residuals / safe_norm[:, None]) * allowed[:, None],
                      residuals)
    if weights is None:
        bound = allowed
    else:
        values = values * weights[:, None]
        bound = weights * allowed
    # x = 0 without an intercept: the gradient r [x, 1] is 0 whatever r.
    bound = xp.where(positive, bound, xp.full_like(bound, math.inf))
    magnitude = xp.abs(values)
    usable = (finite & valid_norm
              & xp.where(clipped, allowed >= tiny, xp.ones_like(clipped))
              & xp.all(magnitude <= largest, axis=1))
    zeros = xp.zeros_like(values)
    values = xp.where(usable[:, None] & (magnitude >= tiny), values, zeros)
    stored = xp.astype(values, dtype)
    # Rounding may overshoot the bound: shrink such rows, checked as stored.
    for attempt in range(2):
        wide_values = xp.astype(stored, residuals.dtype)
        norms = _norms_of_rows(xp, wide_values)
        over = ~(norms <= bound * NORM_SLACK)  # a NaN norm is over
        if attempt == 0:
            shrink = bound / xp.where(over, norms, xp.ones_like(norms))
        else:
            shrink = xp.full_like(norms, 1.0 - 4.0 * float(info.eps))
        shrink = xp.where(over, shrink, xp.ones_like(shrink))
        wide_values = wide_values * shrink[:, None]
        wide_values = xp.where(xp.abs(wide_values) >= tiny, wide_values, zeros)
        stored = xp.astype(wide_values, dtype)
    over = ~(_norms_of_rows(xp, xp.astype(stored, residuals.dtype)) <= bound * NORM_SLACK)
    return xp.where(over[:, None], xp.zeros_like(stored), stored)


def full_precision_switches(torch):
    """The settings that keep float32 products in float32: ``(read, write, full)`` each.

    TensorFloat-32 and bfloat16 products would let a clipped contribution
    exceed the checked norm by about 1e-3. PyTorch 2.9 and later have one
    ``fp32_precision`` per backend (mixing it with the older flags is an
    error); older releases have the flags and the global matmul precision.
    ``torch`` may be a stand-in with its ``backends`` layout.
    """
    backends = torch.backends
    if hasattr(backends.cuda.matmul, "fp32_precision"):
        # cuBLAS, oneDNN (CPU) and cuDNN products.
        places = (backends.cuda.matmul, getattr(backends.mkldnn, "matmul", None),
                  getattr(backends.cudnn, "conv", None))
        return [
            (lambda place=place: place.fp32_precision,
             lambda value, place=place: setattr(place, "fp32_precision", value), "ieee")
            for place in places if hasattr(place, "fp32_precision")]
    switches = [
        (lambda place=place: place.allow_tf32,
         lambda value, place=place: setattr(place, "allow_tf32", value), False)
        for place in (backends.cuda.matmul, backends.cudnn)]
    switches.append((torch.get_float32_matmul_precision, torch.set_float32_matmul_precision,
                     "highest"))
    return switches


@contextlib.contextmanager
def full_precision_products(xp, torch_module=None):
    """Within the block, PyTorch multiplies float32 (and float64) in full precision.

    The clipped sum must not round below the precision the clip checked. The
    user's (process-wide) settings are restored on exit. ``torch_module``:
    ``torch`` when None (a stand-in in tests).
    """
    if torch_module is None and not array_api_compat.is_torch_namespace(xp):
        yield
        return
    if torch_module is None:
        import torch as torch_module
    switches = full_precision_switches(torch_module)
    saved = [(write, read()) for read, write, _ in switches]
    try:
        for _, write, full in switches:
            write(full)
        yield
    finally:
        for write, value in reversed(saved):
            write(value)


def _smoother(xp, device, n_features, sigma, dtype):
    """``A_sigma^{-1}`` along the feature axis of a (K, d) array, or None for sigma = 0.

    By real FFT where the namespace has it, else by the host's O(d) solve.
    """
    if sigma <= 0:
        return None
    if hasattr(xp, "fft"):
        complex_dtype = xp.complex64 if dtype == xp.float32 else xp.complex128
        eigenvalues = xp.asarray(
            to_device(smoothing_eigenvalues(n_features, sigma), xp, device), dtype=complex_dtype)

        def smooth(coefficients):
            spectrum = xp.fft.rfft(coefficients, axis=-1) / eigenvalues
            return xp.astype(xp.fft.irfft(spectrum, n=n_features, axis=-1), dtype)

        return smooth
    omega = smoothing_omega(sigma)

    def smooth_on_host(coefficients):
        rows = np.ascontiguousarray(to_numpy(coefficients))
        # smooth_rows leaves the last column (the intercepts) alone.
        padded = np.concatenate([rows, np.zeros((rows.shape[0], 1), rows.dtype)], axis=1)
        smooth_rows(padded, n_features, omega, sigma)
        return xp.asarray(to_device(padded[:, :n_features], xp, device), dtype=dtype)

    return smooth_on_host


def initial_gradient_norms(X, y, n_outputs, loss_code, loss_threshold, fit_intercept):
    """Per-sample gradient norms at zero weights, and ``||[x_i, 1]||``, as NumPy arrays."""
    xp = array_api_compat.array_namespace(X)
    device = device_of(X)
    wide = wide_dtype(xp, device)
    targets = xp.asarray(to_device(np.asarray(y, dtype=np.float64), xp, device), dtype=wide)
    margins = xp.zeros((X.shape[0], n_outputs), dtype=wide, device=device)
    residuals = loss_derivative(xp, loss_code, margins, targets, loss_threshold)
    norms = row_norms(xp, X, wide)
    feature_norms = xp.hypot(norms, xp.full_like(norms, 1.0 if fit_intercept else 0.0))
    gradient_norms = xp.linalg.vector_norm(residuals, axis=1) * feature_norms
    return to_numpy(gradient_norms), to_numpy(feature_norms)


def clipped_gradient_sum(xp, X_batch, y_batch, feature_norms, params, *, loss_code,
                         loss_threshold, clip_norm, fit_intercept, wide, weights=None):
    """``sum_i w_i clip_C(r_i [x_i, 1])`` over a batch, without per-sample gradients.

    Everything but ``X_batch`` in the ``wide`` dtype; returns the (K, d + 1)
    sum in the dtype of ``params``.
    """
    n_features = X_batch.shape[1]
    # In the parameters' (wide) dtype, for which the lattice's error bound holds.
    X_batch = xp.astype(X_batch, params.dtype)
    margins = xp.matmul(X_batch, params[:, :n_features].T) + params[:, n_features]
    residuals = loss_derivative(xp, loss_code, xp.astype(margins, wide), y_batch,
                                loss_threshold)
    coefficients = clipped_residuals(xp, residuals, feature_norms, clip_norm, params.dtype,
                                     weights)
    coef_sum = xp.matmul(coefficients.T, X_batch)
    if fit_intercept:
        intercept_sum = xp.sum(coefficients, axis=0)[:, None]
    else:
        intercept_sum = xp.zeros((params.shape[0], 1), dtype=params.dtype,
                                 device=device_of(params))
    return xp.concat([coef_sum, intercept_sum], axis=1)


class ArrayApiTraining:
    """The array API backend of the training loop: functional updates on a device.

    The steps of :class:`~sklearn_dplssgd._backends.NumpyTraining`; the batches
    and the noise are drawn on the host, as the NumPy backend draws them, and
    copied to the device a chunk at a time.
    """

    def __init__(self, X, y, n_outputs, plan, rng, *, batch_sampler=poisson_batches,
                 noise_source=None, sample_weight=None):
        xp = array_api_compat.array_namespace(X)
        device = device_of(X)
        self.xp, self.device, self.plan, self.rng, self.X = xp, device, plan, rng, X
        n_features = X.shape[1]
        self.n_features = n_features
        self.dtype = X.dtype
        self.wide = wide_dtype(xp, device)
        norms = without_long_rows(xp, row_norms(xp, X, self.wide))
        intercept_term = 1.0 if plan.fit_intercept else 0.0
        # ||[x_i, 1]|| by hypot: the square of a long row's norm would overflow.
        self.feature_norms = xp.hypot(norms, xp.full_like(norms, intercept_term))
        self.y = xp.asarray(to_device(np.asarray(y, dtype=np.float64), xp, device),
                            dtype=self.wide)
        self.params = xp.zeros((n_outputs, n_features + 1), dtype=self.wide, device=device)
        self.sum_dtype = np.float64 if self.wide == xp.float64 else np.float32
        self.weights = None if sample_weight is None else xp.asarray(
            to_device(np.asarray(sample_weight, dtype=np.float64), xp, device), dtype=self.wide)
        self.noise_source = rounded_gaussian_noise if noise_source is None else noise_source
        self.batch_sampler = batch_sampler
        self._smoother = _smoother(xp, device, n_features, plan.sigma, X.dtype)
        self._n_noisy_columns = n_features + int(bool(plan.fit_intercept))
        # The L2 penalty decays the coefficients, never the intercepts.
        self._penalised = to_device(np.arange(n_features + 1) < n_features, xp, device)

    def context(self):
        # Every product that feeds the clip or the sum in full precision,
        # whatever the user's TF32 settings (restored after the loop).
        return full_precision_products(self.xp)

    def chunks(self, chunk_starts, chunk, lattice):
        xp, n_steps = self.xp, self.plan.n_steps
        self._lattice_step = 0.0 if lattice is None else lattice.step
        for chunk_start in chunk_starts:
            chunk_steps = min(chunk, n_steps - chunk_start)
            rows = offsets = None
            if self.plan.sample_rate < 1.0:
                rows, offsets = self.batch_sampler(self.rng, self.X.shape[0],
                                                   self.plan.sample_rate, chunk_steps)
                rows = to_device(rows.astype(np.int64), xp, self.device)
            check_chunk_batches(lattice, offsets, self.X.shape[0])
            noise = chunk_noise(self.noise_source, self.rng, lattice, chunk_start, chunk_steps,
                                self.params.shape, self._n_noisy_columns)
            if self.wide == xp.float64:
                noise = xp.asarray(to_device(noise, xp, self.device), dtype=xp.float64)
            yield chunk_start, chunk_steps, (rows, offsets, noise)

    def gradient_sum(self, params, draws, local_step):
        xp, plan = self.xp, self.plan
        rows, offsets, noise = draws
        if rows is None:
            X_batch, y_batch, norms_batch = self.X, self.y, self.feature_norms
            weights_batch = self.weights
        else:
            batch = rows[int(offsets[local_step]):int(offsets[local_step + 1])]
            X_batch = xp.take(self.X, batch, axis=0)
            y_batch = xp.take(self.y, batch, axis=0)
            norms_batch = xp.take(self.feature_norms, batch, axis=0)
            weights_batch = None if self.weights is None else xp.take(self.weights, batch,
                                                                      axis=0)
        grad = clipped_gradient_sum(
            xp, X_batch, y_batch, norms_batch, params, loss_code=plan.loss_code,
            loss_threshold=plan.loss_threshold, clip_norm=plan.clip_norm,
            fit_intercept=plan.fit_intercept, wide=self.wide, weights=weights_batch)
        step = self._lattice_step
        if step == 0.0:
            return grad
        if self.wide == xp.float64:
            # Exact in float64: a power-of-two step, integers below 2**53.
            return step * (noise[local_step, ...] + xp.round(grad / step))
        # Without float64 on the device the integers are formed on the host.
        host = np.array(to_numpy(grad), dtype=np.float64)
        release_on_lattice(host, noise[local_step], step)
        return xp.asarray(to_device(host, xp, self.device), dtype=self.wide)

    def smooth(self, grad):
        if self._smoother is None:
            return grad
        n_features = self.n_features
        return self.xp.concat([self._smoother(grad[:, :n_features]), grad[:, n_features:]],
                              axis=1)

    def decay(self, params, shrink):
        if shrink == 1.0:
            return params
        return self.xp.where(self._penalised, params * shrink, params)

    def project(self, params):
        return params

    def new_average(self):
        return self.xp.zeros(self.params.shape, dtype=self.wide, device=self.device)

    def add_to_average(self, averaged, params, count):
        return averaged + (self.xp.astype(params, self.wide) - averaged) / count

    def all_finite(self, params):
        return bool(self.xp.all(self.xp.isfinite(params)))

    def to_host(self, params):
        return to_numpy(params)

    def finish(self, params):
        return self.xp.astype(params, self.dtype)

    def compiled_steps(self, update):
        return None  # the steps run in Python, each one a few device calls


def train_dp_lssgd_array_api(X, y, n_outputs, plan, rng, *, verbose=0, epoch_callback=None,
                             batch_sampler=poisson_batches, noise_source=None,
                             sample_weight=None):
    """Run the T steps of DP-LSSGD from zero weights on array API arrays.

    As :func:`~sklearn_dplssgd._backends.train_dp_lssgd` (same plan and
    mechanism), with ``X`` on its device and ``y``, ``sample_weight`` on the
    host; the parameters come back in ``X``'s namespace, device and dtype.
    """
    backend = ArrayApiTraining(X, y, n_outputs, plan, rng, batch_sampler=batch_sampler,
                               noise_source=noise_source, sample_weight=sample_weight)
    return run_training(backend, plan, verbose=verbose, epoch_callback=epoch_callback)
