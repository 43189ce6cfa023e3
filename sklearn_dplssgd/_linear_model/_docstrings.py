"""The documentation of what both estimators share, written once.

:func:`fill_parameter_docs` fills the shared parameter, attribute and method
texts into each estimator's docstring (imbalanced-learn's way of keeping one
copy of a parameter's documentation).
"""

import string

__all__ = ["fill_method_docs", "fill_parameter_docs"]


SHARED_PARAMETER_DOCS = {
    "privacy_parameters": """epsilon : float or "remaining", default=1.0
        Target privacy budget: the fit is (epsilon, delta)-differentially
        private with respect to one training row (see ``neighboring``).
        ``float("inf")`` trains without noise (clipping stays on).
        ``"remaining"`` spends what remains of ``ledger``'s ``max_epsilon``
        (``mechanism="gradient"`` only): the noise is set, before any row is
        read, to the smallest that keeps the ledger's total within its cap;
        a second fit with the same ledger is refused, as nothing remains.

    delta : float or "auto", default="auto"
        Target delta, in (0, 1). ``"auto"`` is ``min(1e-5, 1 / (10 n))``, n
        the accounted row count. An explicit delta above ``1 / n_samples``
        issues a :class:`PrivacyLeakWarning`.

    sigma : float, "auto" or "ordered", default="auto"
        Strength of the Laplacian smoothing of the noisy gradient along the
        feature axis, in [0, 1e12] (0 gives plain DP-SGD); post-processing,
        at no privacy cost. It helps where neighbouring features are related
        (pixels, spectra) and biases unordered tables. ``"auto"`` smooths
        only columns found ordered from public information (an image's
        width, numbered column names), ``"ordered"`` declares them ordered.
        The value used is ``sigma_``; see :doc:`the user guide
        </user_guide/hyperparameters>` (Laplacian smoothing).

    clip_norm : float, default=1.0
        Per-sample clipping bound C on the L2 norm of each sample's gradient
        with respect to all parameters together. Choose it without looking
        at the private data.

    mechanism : {"gradient", "output"} or OutputPerturbation, default="gradient"
        What is made private. ``"gradient"``: DP-LSSGD, noise on every
        step's clipped gradient sum, released as integers on a public
        lattice with exactly sampled noise. ``"output"`` or
        :class:`OutputPerturbation` (which holds its public bounds,
        ``row_norm_bound`` and ``weight_norm_bound``): output perturbation
        (Chen, Lee and Kifer, AISTATS 2019), noise added once to the weights
        of a noise-free descent on the L2-penalised objective (smooth losses,
        ``alpha > 0``); see :ref:`output-perturbation-privacy`.

    max_sample_weight : float, default=1.0
        Public bound w_max on the weight of a row (``sample_weight`` times
        its class's ``class_weight``); a larger weight is refused. The noise
        is calibrated to ``w_max * clip_norm``; see :ref:`weights-privacy`.""",
    "training_parameters": """alpha : float, default=1e-4
        L2 regularisation strength, applied as weight decay after the noise;
        the intercept is not penalised.

    fit_intercept : bool, default=True
        Whether to fit intercepts.

    feature_bounds : tuple (lower, upper) or None, default=None
        Public bounds of the features (scalars or one value per feature, as
        :class:`BoundedScaler` takes them), declared from knowledge that does
        not come from the rows. Each fit maps X by :class:`BoundedScaler`'s
        map (clipping outside values; an image's or a one-hot block's zero
        lower bound stays zero), trains on the mapped rows and expresses
        ``coef_`` and ``intercept_`` in the units of X, at no privacy cost.
        Bounds not symmetric around zero need ``fit_intercept=True``; sparse
        and array API inputs are refused. None trains on X as given. See
        :ref:`the user guide <declared-feature-bounds>`.

    batch_size : int or "auto", default="auto"
        Expected batch size b of the Poisson sampling, rate ``q = min(1,
        batch_size / n)`` (n: ``public_n_samples`` when given). The noisy sum
        is divided by ``batch_size``, a public constant. ``"auto"``: see
        :ref:`the user guide <defaults>`.

    max_iter : int or "auto", default="auto"
        Number of epochs: ``T = ceil(max_iter * n / batch_size)`` steps,
        fixed before training (no early stopping). ``"auto"`` gives at least
        1,000 steps.

    learning_rate : {"constant", "inverse_time", "invscaling"}, default=$learning_rate
        Step-size schedule over steps ``t = 1 .. T``: ``eta0``;
        ``eta0 / t``; or ``eta0 / t ** power_t``.

    eta0 : float or "auto", default="auto"
        Initial step size. ``"auto"`` is set from public quantities (the
        noise each weight accumulates over the run), and translated by the
        optimizer's :meth:`Optimizer.default_eta0`; see
        :ref:`defaults-derivation`.

    power_t : float, default=0.5
        Exponent of the ``"invscaling"`` schedule.

    average : bool, int or "auto", default="auto"
        Return the mean of the iterates instead of the last one. ``"auto"``
        and ``True`` average the last share of the steps (a half for the
        regressor, down to a sixteenth for wide classifiers); an int k
        averages the steps after the first k; ``False`` none. For
        ``partial_fit``, ``"auto"`` averages the calls' last iterates
        instead (see :ref:`streaming <streaming-defaults>`). Costs no privacy.

    optimizer : {"sgd", "momentum", "adam", "adagrad"} or Optimizer, default="sgd"
        The update applied to the smoothed noisy gradient: :class:`SGD`,
        :class:`Momentum`, :class:`Adam` (DP-LSAdam) or :class:`AdaGrad`. A
        name takes the default settings; an instance sets them (searchable
        as ``optimizer__beta1``). Changes nothing in the accounting; see
        :ref:`optimizers-and-schedules`.

    noise_schedule : {"constant", "exponential", "step"}, NoiseSchedule or array-like, \
            default="constant"
        The public shape of the noise multiplier over the run (Hong, Wang
        and Zhou, FAccT 2022): :class:`ExponentialNoise`, :class:`StepNoise`,
        an instance of either, or an array of the relative levels of that
        many equal blocks of steps (at most 50). The scale is calibrated so
        that the whole run meets (epsilon, delta); see
        ``noise_multipliers_``.

    warm_start : bool, default=False
        When fitted, ``fit`` starts from ``coef_`` and ``intercept_`` and
        the new release is composed with the earlier ones (see
        ``partial_fit``). ``coef_init`` and ``intercept_init`` take
        precedence and start a new series.""",
    "accounting_parameters": """\
accountant : {"pld", "rdp"}, default="pld"
        How the noise is calibrated to (epsilon, delta): dp-accounting's
        privacy-loss-distribution accountant (the tightest) or its Renyi DP
        accountant (looser: 5 to 10 percent more noise); see
        :ref:`accountants`.

    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency of the guarantee: two data sets of the same size that
        differ in one row (sensitivity 2 C), or one row added or removed
        (sensitivity C), which makes the row count private: it needs
        ``public_n_samples``.

    public_n_samples : int or None, default=None
        A row count declared public, used instead of the actual one for the
        sample rate and the number of steps. Required with
        ``neighboring="add_remove"`` and finite ``epsilon``; choose a value
        close to the real size. With ``partial_fit``, per call.

    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Used only with ``reproducible=True``; otherwise every fit draws from
        fresh operating-system entropy (a known seed would let anyone
        regenerate the noise).

    reproducible : bool, default=False
        Derive the batches and the noise from ``random_state``, for tests
        and research on public data. Such a fit is **not private**: it
        reports ``epsilon_ = inf``. A ``Generator`` is copied, never advanced.

    ledger : PrivacyLedger or None, default=None
        Budget record shared by every fit on the same rows: each fit records
        its ``dp_event_`` before reading any row, and is refused beyond the
        ledger's cap. Survives ``clone`` and joblib workers.

    n_jobs : int or None, default=None
        Threads of a fit (``None`` means 1, negative means all cores); the
        guarantee does not depend on it. See :ref:`many-cores`.

    verbose : int, default=0
        Print one line per epoch (step, weight norm, elapsed time). The
        elapsed time depends on the data and is not covered: do not
        publish it.""",
    "fitted_attributes": """sigma_ : float
        The smoothing strength used (``sigma`` resolved).

    sigma_reason_ : str
        Why ``sigma_`` has its value (quoted by ``privacy_report()``).

    noise_multipliers_ : ndarray of shape (n_blocks,)
        The noise multiplier of each block of the noise schedule.

    n_iter_ : int
        Epochs run by the last release (1 for a ``partial_fit`` call). Like
        the attributes down to ``sample_rate_``, it describes the last
        ``fit`` or ``partial_fit`` call.

    batch_size_ : int
        The expected batch size used.

    eta0_ : float
        The initial step size used; later ``partial_fit`` calls keep it and
        continue the schedule from step ``t_``.

    average_start_ : int or None
        The model averages the iterates after this many steps (None: no
        averaging over steps).

    n_steps_ : int
        Number of steps T of the last release.

    t_ : int
        Number of steps of all the releases since the last cold ``fit``.

    noise_multiplier_ : float
        z: the noise on each step's clipped sum has standard deviation z
        times its sensitivity on the release lattice (a hair above
        ``max_sample_weight * clip_norm``; see :meth:`privacy_report`).

    sample_rate_ : float
        Poisson sampling rate q (NaN with ``mechanism="output"``).

    output_sensitivity_ : float or None
        ``mechanism="output"``: the L2 sensitivity of the noise-free
        weights; None for gradient perturbation.

    epsilon_ : float
        Epsilon reached, as certified by the accountant: never above
        ``epsilon``; ``inf`` without noise or when ``reproducible``. After
        several releases of one series, the epsilon of all of them (see
        ``disjoint_batches_``); see :ref:`fitted-attributes`.

    delta_ : float
        Delta of the guarantee, fixed by the first release of a series.

    neighboring_ : str
        Adjacency under which ``epsilon_`` holds.

    dp_event_ : dp_accounting.DpEvent
        What the fit released, as a dp-accounting event from which any
        accountant with ``neighboring_``'s relation recomputes ``epsilon_``;
        after several releases, their sequential composition.

    dp_events_ : list of dp_accounting.DpEvent
        The event of each release of the series, in order.

    disjoint_batches_ : list of bool
        For each release of ``dp_events_``, whether it was declared to see
        none of the earlier releases' rows (``partial_fit(...,
        disjoint_batches=True)``).

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X is a DataFrame with string
        column names.""",
}


# Paragraphs both estimators' methods share, filled into their docstrings.
SHARED_METHOD_DOCS = {
    "partial_fit_release": """Each call is a release of its own rows, calibrated to ``(epsilon,
        delta_)``: one epoch from the current ``coef_`` and ``intercept_``
        (zeros on the first call). ``epsilon_`` and ``dp_event_`` then cover
        all the calls since the last cold ``fit``, and every call is charged
        to the ``ledger``. See :ref:`streaming-privacy`.""",
    "disjoint_batches": """disjoint_batches : bool, default=False
            Your promise that this call's rows were in no earlier release
            of the series, assigned without looking at their values.
            ``epsilon_`` then composes this call in parallel with the
            earlier ones; ``dp_event_`` and the ledger keep the sequential
            composition. With ``dask_ml.wrappers.Incremental``, pass it to
            ``fit``.""",
    "rows_X": """X : {array-like, sparse matrix, Dask array or DataFrame} of shape \
                (n_samples, n_features)
            The samples. A Dask collection is predicted blockwise where its
            partitions are, giving a lazy Dask array.""",
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
            for key, text in SHARED_PARAMETER_DOCS.items()
        }
        cls.__doc__ = cls.__doc__.format(**docs)
        return cls

    return decorate


def fill_method_docs(method):
    """Method decorator: fill the shared method texts into ``method.__doc__``.

    Apply it below ``available_if``, whose descriptor hides the function.
    """
    method.__doc__ = method.__doc__.format(**SHARED_METHOD_DOCS)
    return method
