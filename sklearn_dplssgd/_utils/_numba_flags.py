"""The floating-point flags the compiled kernels are built with.

One definition for every kernel module, so that the kernels and their NumPy
oracles agree to the same rounding everywhere.
"""

__all__ = ["CONTRACT_ONLY", "FASTMATH"]

# Reassociation lets LLVM vectorise reductions; NaN and inf keep their IEEE
# meaning (no 'nnan'/'ninf') so a diverging fit is still detected. It is NOT
# used where per-sample clipping is computed: reassociated, the clip factor
# of an extreme sample can overflow or underflow (see
# ``_kernels.clipped_residual``).
FASTMATH = {"reassoc", "contract", "nsz", "arcp"}
# Fused multiply-add only: exact-order arithmetic otherwise.
CONTRACT_ONLY = {"contract"}
