"""The documentation of what both estimators share, written once.

:func:`fill_parameter_docs` fills the shared parameter, attribute and method
texts into each estimator's docstring (imbalanced-learn's way of keeping one
copy of a parameter's documentation).
"""

import string

__all__ = ["fill_method_docs", "fill_parameter_docs"]


# Documentation of the parameters both estimators share, filled into their
# docstrings once (the placeholders are the parameter names).
SHARED_PARAMETER_DOCS = {
    "privacy_parameters": """epsilon : float or "remaining", default=1.0
        Target privacy budget: the fit is (epsilon, delta)-differentially
        private with respect to one training row, replaced (the default) or
        added or removed (see ``neighboring``). ``float("inf")`` trains without noise (clipping
        stays on): the non-private reference at the same settings.
        ``"remaining"`` spends what remains of ``ledger``'s budget (a
        :class:`PrivacyLedger` with ``max_epsilon`` is required;
        ``mechanism="gradient"`` only): before any row is read, the noise is
        set to the smallest for which the ledger's composed total after this
        fit (its accountant, adjacency and delta) stays within
        ``max_epsilon``; ``epsilon_`` states the fit's own share at
        ``delta``. The first fit takes everything: a second fit with the
        same ledger (a clone, a cross-validation fold) is refused, as
        nothing remains.

    delta : float or "auto", default="auto"
        Target delta, in (0, 1). ``"auto"`` is ``min(1e-5, 1 / (10 n))`` with
        n the accounted row count (``public_n_samples`` when given): always
        below ``1 / n``. An explicit delta should be well below
        ``1 / n_samples``; a :class:`PrivacyLeakWarning` is issued otherwise
        (for finite epsilon).

    sigma : float, "auto" or "ordered", default="auto"
        Strength of the Laplacian smoothing of the noisy gradient, in
        [0, 1e12] (0 gives plain DP-SGD). Smoothing is post-processing and costs no privacy. It
        acts along the feature axis, so it helps only where neighbouring
        features are related (pixels, spectra, time series) and biases the
        steps where the columns have no order (a one-hot table). Intercepts
        are not smoothed. ``"auto"`` smooths only columns found ordered from
        public information: an image's width (``s * s`` or ``3 * s * s``
        columns, ``s >= 16``, not a power of two: a square width below that
        is a table's too), unnamed or named as one numbered sequence
        (``pixel1`` .. ``pixel784``); never sparse input, named columns of a
        table or an encoder (``age``, ``cat__sex_Male``), or other dense
        tables. ``"ordered"`` declares the columns ordered (an 8 x 8 image).
        Ordered columns get, by width, 1 for the regressor, and for the
        classifier 0 below 10 features, 0.25 from 10 and 1 from 100. The
        value used is ``sigma_``; ``privacy_report()`` says why.

    clip_norm : float, default=1.0
        Per-sample clipping bound C on the L2 norm of each sample's gradient
        with respect to all parameters together (every output's coefficients
        and intercepts). Choose it without looking at the private data.

    mechanism : {"gradient", "output"}
        What is made private (default ``"gradient"``). ``"gradient"``: DP-LSSGD, noise on every
        step's clipped gradient sum, released as integers: the sum rounded
        onto a public lattice plus Gaussian noise rounded to integers and
        sampled exactly (no floating-point noise, so the floating-point
        attacks on noise samplers have nothing to read), on every input.
        ``"output"``: output perturbation
        (Chen, Lee and Kifer, AISTATS 2019; see the user guide's page on
        it): rows are clipped to
        ``row_norm_bound``, noise-free mini-batch descent with a constant
        step runs on the L2-penalised objective (``alpha > 0``, intercept
        penalised too), and Gaussian noise scaled to the weights'
        replace-one sensitivity is added once. For smooth losses only
        (``log_loss``, ``huber``, and ``squared_error`` with
        ``target_bounds`` and ``weight_norm_bound``), replace-one adjacency,
        ``learning_rate="constant"``, ``optimizer="sgd"``, constant noise and
        no averaging; ``clip_norm``, ``sigma`` and the optimizer settings are
        not used. It wins when ``n * alpha`` is large: the sensitivity is
        about ``2 R / (n alpha)``.

    row_norm_bound : float, default=1.0
        ``mechanism="output"`` only: the public L2 bound every row (without
        the intercept's 1) is clipped to before training.

    weight_norm_bound : float or None, default=None
        ``mechanism="output"`` with ``loss="squared_error"`` only (required
        there): the public radius of the ball the weights are projected onto
        after every step, which bounds the squared error's gradient.

    max_sample_weight : float, default=1.0
        Public bound w_max on the weight of a row (``sample_weight`` times
        the ``class_weight`` of its class, when given); a larger weight is
        refused. A weight multiplies the row's *clipped* gradient, so one row
        moves each step's sum by at most ``w_max * clip_norm``: the noise is
        calibrated to that, and grows with ``max_sample_weight``. Weights
        are relative: scale them so that the largest possible weight is
        ``max_sample_weight`` (rows of weight below it get less than the
        full clip norm of signal against the same noise).""",
    "training_parameters": """alpha : float, default=1e-4
        L2 regularisation strength. Applied as weight decay after the noise
        (it does not depend on the data); the intercept is not penalised.

    fit_intercept : bool, default=True
        Whether to fit intercepts.

    feature_bounds : tuple (lower, upper) or None, default=None
        Public bounds of the features, declared by the user from knowledge
        that does not come from the rows (a documented range, pixels in
        ``[0, 255]``); each of ``lower`` and ``upper`` is a scalar or one
        value per feature, as :class:`BoundedScaler` takes them. Each fit
        maps X to ``[-1, 1]`` by :class:`BoundedScaler`'s map (values outside
        the bounds are clipped), trains on the mapped rows, and expresses
        ``coef_`` and ``intercept_`` in the units of X: for rows inside the
        bounds the model is the one trained on the mapped rows. On an
        image's columns (its width, unnamed or numbered columns, or
        ``sigma="ordered"``) a lower bound of 0 keeps its zero: those columns
        are divided by their upper bound, onto ``[0, 1]``, so that the
        background does not become -1; so do, in a table, the columns of a
        one-hot block (declared ``(0, 1)`` and named ``<feature>_<category>``
        beside another category of the same feature, as one-hot encoders
        name them), so that the absent categories do not become -1
        (``BoundedScaler``'s ``keep_zero="auto"``). ``predict``
        does not clip (it is that linear model, folded). The ``"auto"``
        defaults are tuned for features in ``[-1, 1]``, so declaring the
        range of features that fill ``[0, 1]`` or any other range gives them
        the step size they were tuned for; at no privacy cost (the bounds are
        public and the fold is post-processing). Bounds that are not
        symmetric around zero need ``fit_intercept=True``; sparse and array
        API inputs are refused (map them beforehand). ``row_norm_bound`` and
        ``weight_norm_bound`` apply to the mapped rows and weights. None
        trains on X as given.

    batch_size : int or "auto", default="auto"
        Expected batch size b. ``"auto"`` (see the user guide's section on
        defaults): n for tables of up to 256 rows (full batches), 256 up to
        8,192 rows, ``ceil(n / 32)`` beyond, with n the accounted row count.
        Each step includes every row independently with probability
        ``q = min(1, batch_size / n_samples)`` (with
        ``public_n_samples`` in place of ``n_samples`` when it is given; Poisson
        sampling) and divides the noisy gradient sum by ``batch_size``, a
        public constant (never by the realised batch size, nor by the
        number of rows when ``batch_size >= n_samples``: both depend on the
        private data).

    max_iter : int or "auto", default="auto"
        Number of epochs; ``"auto"`` gives at least 1,000 steps. The number of steps is
        ``T = ceil(max_iter * n_samples / batch_size)`` (``T = max_iter`` when
        ``batch_size >= n_samples``), fixed before training; there is no early
        stopping (it would depend on the private data).

    learning_rate : {"constant", "inverse_time", "invscaling"}, default=$learning_rate
        Step-size schedule over steps ``t = 1 .. T``: ``eta0``;
        ``eta0 / t`` (the decay used in the DP-LSSGD paper); or
        ``eta0 / t ** power_t`` (as scikit-learn's SGD, with t counting steps).

    eta0 : float or "auto", default="auto"
        Initial step size. ``"auto"`` sets the noise accumulated on each
        weight over the run, ``eta0 (C / b) sqrt(sum_t z_t^2 s_t^2)`` for the
        schedule's shape ``s_t`` and the calibrated noise multipliers
        ``z_t``, to ``1.75 sqrt(m / d)`` for d features within
        ``[m / 16, 2]`` (``m``: the step without noise, 4 for the
        classifier, 1 for the regressor), capped at ``m / clip_norm`` and at
        ``1 / alpha``; each optimizer translates it by its own rule
        (:meth:`Optimizer.default_eta0`: times ``1 - momentum`` with
        momentum; that noise over ``sqrt(sum_t s_t^2)`` with Adam, whose
        steps are about ``eta0`` per coordinate). The rule reads no data.

    power_t : float, default=0.5
        Exponent of the ``"invscaling"`` schedule.

    average : bool, int or "auto", default="auto"
        Return the mean of the iterates instead of the last one:
        ``"auto"`` and ``True`` average the last share of the steps (the
        first iterates lag behind the model and would drag the mean back):
        a half for the regressor; for the classifier a share that shrinks
        with the width of X, from a half (up to 3 features) to a sixteenth
        (from 196), whose short steps leave the weights still drifting at
        the end of the run. An int k averages the steps after the first k
        (steps, not samples as in scikit-learn's SGD), ``False`` none. For
        ``partial_fit``, ``"auto"`` averages across the calls instead: each
        call trains without averaging, the next continues from its last
        iterate, and ``coef_`` is the mean of the calls' last iterates, call
        j (``s_j`` steps ending at step ``t_j``) weighted by ``s_j t_j^2``
        (the series average). Averaging is post-processing of the noisy
        iterates: it costs no privacy.

    optimizer : {"sgd", "momentum", "adam", "adagrad"} or Optimizer, default="sgd"
        The update applied to the smoothed noisy gradient: plain steps
        (:class:`SGD`), heavy-ball momentum (:class:`Momentum`, ``v =
        momentum v + g``, step along ``v``), Adam (:class:`Adam`, DP-LSAdam)
        or AdaGrad (:class:`AdaGrad`). A name takes the optimizer's default
        settings; an instance such as ``Adam(beta1=0.8)`` sets them, and a
        search reaches them as ``optimizer__beta1``. A function of the noisy
        gradients only: it changes nothing in the privacy accounting. Adam
        and AdaGrad divide each coordinate by its running gradient magnitude,
        which is mostly the noise's own: keep ``eta0`` small (``"auto"``
        does).

    noise_schedule : {"constant", "exponential", "step"}, NoiseSchedule or array-like, \
            default="constant"
        The public shape of the noise multiplier over the run (Hong, Wang and Zhou, FAccT 2022's
        dynamic schedules): ``"exponential"`` (:class:`ExponentialNoise`)
        decays it geometrically to half its first level in the last epoch,
        ``"step"`` (:class:`StepNoise`) lowers it after half and after three
        quarters of the steps to the same final half; an object sets the
        final ratio (``ExponentialNoise(final_ratio=0.25)``; searchable as
        ``noise_schedule__final_ratio`` by scikit-learn's searches) or, for
        the exponential schedule, a per-epoch factor (``per_epoch=0.9``); an
        array gives the relative levels of that many equal blocks of steps
        (at most 50). The overall scale is calibrated so that the whole run
        meets (epsilon, delta); the per-block multipliers are reported as
        ``noise_multipliers_``.

    warm_start : bool, default=False
        When the estimator is already fitted, ``fit`` starts from its
        ``coef_`` and ``intercept_`` instead of zeros, and the new release is
        composed with the earlier ones: ``epsilon_`` and ``dp_event_`` then
        cover all of them (see ``partial_fit`` and its ``disjoint_batches``).
        ``coef_init`` and ``intercept_init`` given to ``fit`` take precedence
        and start a new series.""",
    "accounting_parameters": """\
accountant : {"pld", "rdp"}, default="pld"
        How the noise multiplier is calibrated to (epsilon, delta).
        ``"pld"``: the privacy-loss-distribution accountant of dp-accounting
        with a fine discretisation (the tightest: about 1e-4 relative
        discretisation error; 0.05 to 0.3 s for typical settings, seconds
        for tens of thousands of steps, cached). ``"rdp"``: the Renyi DP
        accountant with a dense grid of orders up to 1024 (a valid but
        looser bound: 5 to 10 percent more noise, and under
        ``"replace_one"`` it uses a group-privacy step).

    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency of the guarantee. ``"replace_one"``: two training sets of
        the same size that differ in one row (sensitivity 2 C); the number
        of rows is then the same for both, so the sample rate and the number
        of steps may be computed from it. ``"add_remove"``: one row added or
        removed (sensitivity C, about half the noise), which makes the
        number of rows itself private: it needs ``public_n_samples``.

    public_n_samples : int or None, default=None
        A row count declared public, used instead of the actual number of
        rows to set the sample rate ``q = min(1, batch_size /
        public_n_samples)`` and the number of steps ``T = ceil(max_iter *
        public_n_samples / batch_size)``, so that nothing in the mechanism
        depends on the private row count. Required with
        ``neighboring="add_remove"`` and finite ``epsilon``. Each step still
        samples the actual rows with rate q, so the expected batch holds
        ``q * n_samples`` rows; choose a value close to the real size (e.g. a
        published or rounded count). With ``partial_fit`` it is the declared
        row count of each call.

    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Used only with ``reproducible=True``. By default every fit draws its
        batches and its noise from fresh operating-system entropy whatever
        ``random_state`` is (a warning says so): a seed is
        part of the model's ``get_params()`` and pickle, and anyone who
        knows it can regenerate the noise and remove it.

    reproducible : bool, default=False
        Derive the batches and the noise from ``random_state``, so that fits
        can be repeated exactly, for tests and research on public data. Such
        a fit is **not private**: the seed travels with the model, so it
        reports ``epsilon_ = inf`` (``noise_multiplier_`` is still the
        calibrated noise). A ``Generator`` passed as ``random_state`` is
        copied, never advanced; a ``RandomState`` gives 128 bits of seed.

    ledger : PrivacyLedger or None, default=None
        Budget record shared by every fit on the same rows: each fit records
        its ``dp_event_`` there before reading any row, and is refused if the
        ledger's composed epsilon would exceed its cap. Survives ``clone``
        and joblib worker processes.

    n_jobs : int or None, default=None
        Threads of a fit (``None`` means 1; any negative value means all
        cores). Each step's batch is split over a team of threads when it is
        large enough (batch size times outputs times features of at least
        400,000); from 3 threads on, one of them draws the next batches and
        noise ahead. The draws are those of a serial fit, so the model
        differs from it only by the rounding of the additions; the privacy
        guarantee does not depend on ``n_jobs``.

    verbose : int, default=0
        Print one line per epoch: the epoch, the step, the norm of the
        weights (covered by the guarantee) and the elapsed time (which
        depends on the data: it is for the person running the fit, not
        covered; do not publish it). Never a loss on the private data.""",
    "fitted_attributes": """sigma_ : float
        The smoothing strength used: ``sigma``, or what ``"auto"`` or
        ``"ordered"`` resolved to from the input's width, format and column
        names.

    sigma_reason_ : str
        Why ``sigma_`` has its value, from the same public inputs (quoted by
        ``privacy_report()``).

    noise_multipliers_ : ndarray of shape (n_blocks,)
        The noise multiplier of each block of the noise schedule (one value
        for constant noise).

    n_iter_ : int
        Number of epochs run by the last release (``max_iter``, resolved
        when ``"auto"``; 1 for a ``partial_fit`` call). Like
        ``batch_size_``, ``average_start_``, ``n_steps_``,
        ``noise_multiplier_``, ``noise_multipliers_`` and ``sample_rate_``,
        it describes the last ``fit`` or ``partial_fit`` call.

    batch_size_ : int
        The expected batch size used (``batch_size`` resolved).

    eta0_ : float
        The initial step size used (``eta0`` resolved). ``partial_fit``
        calls after the first keep it, and continue the learning-rate
        schedule from step ``t_``.

    average_start_ : int or None
        The returned model averages the iterates after this many steps
        (None: the last iterate; for ``partial_fit`` at ``average="auto"``,
        None, the model being the series average across calls).

    n_steps_ : int
        Number of steps T of the last release (with ``mechanism="output"``:
        passes times the ``floor(n / batch_size)`` batches).

    t_ : int
        Number of steps taken by all the releases of the series (the
        ``partial_fit`` calls and warm-started fits since the last cold
        ``fit``).

    noise_multiplier_ : float
        z: the noise added to each step's clipped gradient sum has standard
        deviation ``z`` times the sum's sensitivity on the lattice it is
        released on, a hair above ``max_sample_weight * clip_norm`` (the
        rounding and the floating-point error widen it, by about
        ``sqrt(n_coefficients) / 2**20`` relative; :meth:`privacy_report`
        states the figures).

    sample_rate_ : float
        Poisson sampling rate q (NaN with ``mechanism="output"``, whose
        batches are one random permutation of the rows).

    output_sensitivity_ : float or None
        ``mechanism="output"``: the replace-one L2 sensitivity Delta of the
        noise-free weights; the released weights have noise of standard
        deviation ``noise_multiplier_ * output_sensitivity_``. None for
        gradient perturbation.

    epsilon_ : float
        Epsilon actually reached by the fit, as certified by the accountant:
        never above ``epsilon`` with ``"rdp"`` and ``"pld"``. With
        ``epsilon="remaining"``: this fit's own event at ``delta_`` (the
        ledger's total stays within its cap).
        ``inf`` when the fit had no noise or was ``reproducible``. After
        several releases of one series (``partial_fit``, ``warm_start``):
        the epsilon of all of them together, by the accountant from
        ``dp_event_`` at ``delta_``, or, where ``partial_fit`` calls were
        declared ``disjoint_batches=True``, by parallel composition (see
        ``disjoint_batches_``).

    delta_ : float
        Delta of the guarantee; fixed by the first release of a series and
        kept by the later ones (each calibrates its noise to it).

    neighboring_ : str
        Adjacency under which ``epsilon_`` holds.

    dp_event_ : dp_accounting.DpEvent
        What the fit released, as a dp-accounting event:
        ``SelfComposedDpEvent(PoissonSampledDpEvent(sample_rate_,
        GaussianDpEvent(noise_multiplier_)), n_steps_)`` (without the
        sampling when ``sample_rate_ = 1``; one such block per level of a
        noise schedule, composed), ``GaussianDpEvent(2 *
        noise_multiplier_)`` for ``mechanism="output"`` (a sensitivity-2
        query under replace-one), or ``NonPrivateDpEvent()`` for a
        fit without noise or a ``reproducible`` one. Any dp-accounting
        accountant built with ``neighboring_``'s relation recomputes
        ``epsilon_`` from it, and events of several fits compose. After
        several releases of one series: their sequential composition (a
        ``ComposedDpEvent``, runs of equal releases self-composed), whatever
        ``disjoint_batches_`` says.

    dp_events_ : list of dp_accounting.DpEvent
        The event of each release of the series, in order (one element
        after a cold ``fit``).

    disjoint_batches_ : list of bool
        For each release of ``dp_events_``, whether it was declared to see
        none of the rows of the earlier releases (``partial_fit(...,
        disjoint_batches=True)``). ``epsilon_`` is then the largest, over
        the rows, of the composition of the releases that may have seen
        them: a release declared disjoint starts a new part of the rows,
        which it and every later release not declared disjoint may see.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X is a DataFrame with string
        column names.""",
}


# Paragraphs both estimators' methods share, filled into their docstrings.
SHARED_METHOD_DOCS = {
    "partial_fit_release": """Each call is a release of its own rows, calibrated to ``(epsilon,
        delta_)`` on its own: one epoch, ``ceil(n / batch_size)`` steps
        (one with full batches) of Poisson-sampled batches, starting from
        the current ``coef_`` and ``intercept_`` (zeros on the first call;
        with ``average="auto"``, from the previous call's last iterate,
        ``coef_`` being the series average: see ``average``).
        ``epsilon_`` and ``dp_event_`` then cover all the calls since the
        last cold ``fit``: their composition, or, for calls declared
        ``disjoint_batches=True``, parallel composition (when every call is
        declared, the largest of their epsilons). Every call is charged to
        the ``ledger``. See the privacy guide's section on streaming.""",
    "disjoint_batches": """disjoint_batches : bool, default=False
            Your promise that this call's rows were in no earlier release
            of the series (the ``partial_fit`` calls and warm-started fits
            since the last cold ``fit``), and that which rows go to which
            call is decided without looking at their values (arrival order,
            a public key). ``epsilon_`` then composes this call in parallel
            with the earlier ones (see ``disjoint_batches_``). The library
            cannot check the promise; ``dp_event_`` and the ledger keep the
            sequential composition, which holds without it. With
            ``dask_ml.wrappers.Incremental``, pass it to ``fit``, which
            hands it to every block's ``partial_fit``.""",
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

    Applied below ``available_if``, whose descriptor would otherwise hide the
    function (setting the docstring on what the class attribute returns did
    not reach the function, and ``{partial_fit_release}`` was left unfilled).
    """
    method.__doc__ = method.__doc__.format(**SHARED_METHOD_DOCS)
    return method
