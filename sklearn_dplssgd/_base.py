"""Shared base of the DP-LSSGD estimators: parameters, validation, fit glue."""

import math
import numbers
import os
import string
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from ._losses import loss_code
from ._accounting import ACCOUNTANTS, NEIGHBORING_RELATIONS, calibrate_noise
from ._sgd import LEARNING_RATES, learning_rate_schedule, number_of_steps, train_dp_lssgd
from ._validation import Interval, Options, PrivacyLeakWarning, validate_parameters

__all__ = ["BaseDPLSSGD", "fill_parameter_docs"]


def _check_random_state(value):
    if value is None or isinstance(
        value, (np.random.Generator, np.random.RandomState, np.random.SeedSequence)
    ):
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return None if value >= 0 else f"must be a non-negative int; got {value!r}."
    return (
        "must be None, a non-negative int, a numpy Generator, RandomState or "
        f"SeedSequence; got {value!r}."
    )


def make_generator(random_state):
    """A ``numpy.random.Generator`` from ``random_state``.

    ``None`` draws fresh entropy from the operating system, which is what a
    private release needs: anyone who knows the seed can regenerate the noise
    and subtract it.

    Parameters
    ----------
    random_state : None, int, Generator, RandomState or SeedSequence

    Returns
    -------
    rng : numpy.random.Generator
    """
    if isinstance(random_state, np.random.RandomState):
        # Keep scikit-learn's convention that a RandomState instance is
        # consumed (and advanced) by the fit.
        random_state = random_state.randint(np.iinfo(np.int32).max)
    return np.random.default_rng(random_state)


# Documentation of the parameters both estimators share, filled into their
# docstrings once (the placeholders are the parameter names).
_SHARED_PARAMETER_DOCS = {
    "privacy_parameters": """epsilon : float, default=1.0
        Target privacy budget: the fit is (epsilon, delta)-differentially
        private with respect to adding or removing one training row (see
        ``neighboring``). ``float("inf")`` trains without noise (clipping
        stays on): the non-private reference at the same settings.

    delta : float, default=1e-5
        Target delta, in (0, 1). Should be well below ``1 / n_samples``; a
        :class:`PrivacyLeakWarning` is issued otherwise (for finite epsilon).

    sigma : float, default=1.0
        Strength of the Laplacian smoothing of the noisy gradient, in
        [0, 1e12] (0 gives plain DP-SGD). Smoothing is post-processing and costs no privacy. It
        acts along the feature axis, so it helps most when neighbouring
        features are related (pixels, time series). Intercepts are not
        smoothed.

    clip_norm : float, default=1.0
        Per-sample clipping bound C on the L2 norm of each sample's gradient
        with respect to all parameters together (every output's coefficients
        and intercepts). Choose it without looking at the private data.""",
    "training_parameters": """alpha : float, default=1e-4
        L2 regularisation strength. Applied as weight decay after the noise
        (it does not depend on the data); the intercept is not penalised.

    fit_intercept : bool, default=True
        Whether to fit intercepts.

    batch_size : int, default=256
        Expected batch size b. Each step includes every row independently
        with probability ``q = min(1, batch_size / n_samples)`` (Poisson
        sampling) and divides the noisy gradient sum by ``batch_size``, a
        public constant (never by the realised batch size, nor by the
        number of rows when ``batch_size >= n_samples``: both depend on the
        private data).

    max_iter : int, default=20
        Number of epochs. The number of steps is
        ``T = ceil(max_iter * n_samples / batch_size)`` (``T = max_iter`` when
        ``batch_size >= n_samples``), fixed before training; there is no early
        stopping (it would depend on the private data).

    learning_rate : {"constant", "inverse_time", "invscaling"}, default=$learning_rate
        Step-size schedule over steps ``t = 1 .. T``: ``eta0``;
        ``eta0 / t`` (the decay used in the DP-LSSGD paper); or
        ``eta0 / t ** power_t`` (as scikit-learn's SGD, with t counting steps).

    eta0 : float, default=2.0
        Initial step size.

    power_t : float, default=0.5
        Exponent of the ``"invscaling"`` schedule.""",
    "accounting_parameters": """accountant : {"rdp", "pld", "paper", "paper_released"}, default="rdp"
        How the noise multiplier is calibrated to (epsilon, delta).
        ``"rdp"``: Renyi DP accountant of dp-accounting (tight, about 0.2 s,
        cached). ``"pld"``: privacy-loss-distribution accountant (a few
        percent less noise, slower). ``"paper"`` and ``"paper_released"``:
        the closed forms of the DP-LSSGD paper (Theorem 1) and of its released
        code, for reproducing it; the epsilon reported for them is the one the
        RDP accountant certifies for the Poisson-sampled run.

    neighboring : {"add_remove", "replace_one"}, default="add_remove"
        Adjacency of the guarantee: adding or removing one row (sensitivity
        C), or replacing one row (sensitivity 2 C, more noise).

    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Source of the batch sampling and of the noise. ``None`` draws fresh
        entropy. A fixed seed makes fits reproducible, but anyone who knows
        it can regenerate the noise and remove it: never publish a model
        trained with a seed that is not kept secret.

    n_jobs : int or None, default=None
        Threads for the per-sample gradients of large batches. ``None``
        means 1; any negative value means all cores.

    verbose : int, default=0
        Print one line per epoch (epoch, step and the norm of the weights,
        which the guarantee covers; never a loss on the private data, never
        a timing, which could depend on the data).""",
    "fitted_attributes": """n_iter_ : int
        Number of epochs run (``max_iter``).

    n_steps_ : int
        Number of steps T.

    noise_multiplier_ : float
        z: the Gaussian noise added to each step's clipped gradient sum has
        standard deviation ``z * clip_norm`` per coordinate.

    sample_rate_ : float
        Poisson sampling rate q.

    epsilon_ : float
        Epsilon actually reached by the fit, as certified by the accountant:
        never above ``epsilon`` with ``"rdp"`` and ``"pld"``. With the paper
        accountants it is what the RDP accountant certifies for the
        Poisson-sampled run, and a warning says so if that exceeds ``epsilon``.

    delta_ : float
        Delta of the guarantee.

    neighboring_ : str
        Adjacency under which ``epsilon_`` holds.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X is a DataFrame with string
        column names.""",
}


def fill_parameter_docs(**defaults):
    """Class decorator: fill the shared parameter docs into ``cls.__doc__``.

    Parameters
    ----------
    **defaults : str
        Defaults that differ between the estimators, substituted for
        ``$name`` in the shared text (for example ``learning_rate``).
    """

    def decorate(cls):
        docs = {
            key: string.Template(text).substitute(defaults)
            for key, text in _SHARED_PARAMETER_DOCS.items()
        }
        cls.__doc__ = cls.__doc__.format(**docs)
        return cls

    return decorate


class BaseDPLSSGD(BaseEstimator):
    """Base of the DP-LSSGD estimators (not for direct use)."""

    _parameter_constraints = {
        "epsilon": [Interval("real", 0, math.inf, closed="right")],
        "delta": [Interval("real", 0, 1, closed="neither")],
        # Beyond about 1e12 the smoothing is already a projection onto the
        # mean of the coefficients, and past about 1e16 the O(d) solve loses
        # accuracy (1 - omega, about sigma^-1/2, nears float64 rounding).
        "sigma": [Interval("real", 0, 1e12, closed="both")],
        "clip_norm": [Interval("real", 0, None, closed="neither")],
        "alpha": [Interval("real", 0, None, closed="left")],
        "fit_intercept": [Options(bool, (True, False))],
        "batch_size": [Interval("integral", 1, None)],
        "max_iter": [Interval("integral", 1, None)],
        "learning_rate": [Options(str, LEARNING_RATES)],
        "eta0": [Interval("real", 0, None, closed="neither")],
        "power_t": [Interval("real", 0, None, closed="left")],
        "accountant": [Options(str, ACCOUNTANTS)],
        "neighboring": [Options(str, NEIGHBORING_RELATIONS)],
        "random_state": [_check_random_state],
        "n_jobs": [Interval("integral", None, None), None],
        "verbose": [Interval("integral", 0, None)],
    }

    def _validate_hyperparameters(self):
        validate_parameters(self)
        for name in ("sigma", "clip_norm", "eta0", "alpha"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"The {name!r} parameter of {type(self).__name__} must be finite; got {getattr(self, name)!r}.")
        if self.eta0 * self.alpha >= 2.0:
            # The weight decay factor 1 - eta * alpha would have modulus >= 1:
            # the iteration diverges whatever the data.
            raise ValueError(
                f"eta0 * alpha = {self.eta0 * self.alpha:g} must be below 2, or the "
                "L2 penalty makes the iteration diverge: use a smaller learning rate "
                "(eta0) or a smaller alpha."
            )
        if self.n_jobs == 0:
            raise ValueError("The 'n_jobs' parameter must not be 0 (use None, -1 or a positive int).")

    def _n_threads(self):
        if self.n_jobs is None:
            return 1
        n_cores = os.cpu_count() or 1
        return n_cores if self.n_jobs < 0 else min(self.n_jobs, n_cores)

    # Subclasses set these: whether y must be numeric, how targets are
    # encoded for the kernels (``_encode_targets(y) -> (y float64, K)``; it
    # also sets ``classes_`` for classifiers), and the loss threshold.
    _y_numeric = True

    def _encode_targets(self, y):
        raise NotImplementedError

    def _fit(self, X, y):
        """Validate, calibrate the noise, train, and set the common attributes.

        Parameters
        ----------
        X, y : array-like
            Training data as given by the user (never modified).

        Returns
        -------
        params : ndarray of shape (n_outputs, n_features + 1)
        """
        self._validate_hyperparameters()
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse=False,
            dtype=[np.float64, np.float32],
            order="C",
            y_numeric=self._y_numeric,
        )
        y_encoded, n_outputs = self._encode_targets(y)
        n_samples = X.shape[0]
        if math.isfinite(self.epsilon) and self.delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={self.delta:g} is not below 1/n_samples={1.0 / n_samples:.3g}: "
                "a mechanism that publishes a random row with probability delta "
                "meets such a guarantee. Use a smaller delta.",
                PrivacyLeakWarning,
                stacklevel=3,
            )

        sample_rate = min(1.0, self.batch_size / n_samples)
        n_steps = number_of_steps(n_samples, self.batch_size, self.max_iter)
        calibration = calibrate_noise(
            self.epsilon,
            self.delta,
            sample_rate=sample_rate,
            n_steps=n_steps,
            accountant=self.accountant,
            neighboring=self.neighboring,
            n_samples=n_samples,
        )
        params = train_dp_lssgd(
            X,
            y_encoded,
            n_outputs,
            loss_code=loss_code(self.loss, n_outputs),
            loss_threshold=float(getattr(self, "loss_threshold", 0.0)),
            fit_intercept=bool(self.fit_intercept),
            clip_norm=float(self.clip_norm),
            noise_multiplier=calibration.noise_multiplier,
            sample_rate=sample_rate,
            batch_size=self.batch_size,
            n_steps=n_steps,
            n_epochs=self.max_iter,
            learning_rates=learning_rate_schedule(
                self.learning_rate, self.eta0, self.power_t, n_steps
            ),
            alpha=float(self.alpha),
            sigma=float(self.sigma),
            rng=make_generator(self.random_state),
            n_threads=self._n_threads(),
            verbose=self.verbose,
        )
        self.n_iter_ = self.max_iter
        self.n_steps_ = n_steps
        self.noise_multiplier_ = calibration.noise_multiplier
        self.sample_rate_ = sample_rate
        self.epsilon_ = calibration.epsilon
        self.delta_ = calibration.delta
        self.neighboring_ = calibration.neighboring
        return params

    def _decision_values(self, X):
        """Margins ``X coef_^T + intercept_`` (shape (n, K)) of validated X."""
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse=False, dtype=[np.float64, np.float32], reset=False
        )
        coef = np.atleast_2d(self.coef_)
        return X @ coef.T.astype(X.dtype, copy=False) + self.intercept_.astype(X.dtype, copy=False)
