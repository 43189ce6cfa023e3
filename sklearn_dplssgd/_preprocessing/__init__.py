"""``BoundedScaler`` and the private transformers ``DPBoundedScaler`` and ``DPOneHotEncoder``.

The modules are private; the names other layers use are re-exported here.
"""

from ._dp_encoder import DPOneHotEncoder
from ._dp_scaler import DPBoundedScaler
from ._histogram_ranges import histogram_ranges
from ._scaler import (
    as_bounds, BoundedScaler, broadcast_bounds, scale_to_unit, unit_map, zero_kept,
)

__all__ = [
    "BoundedScaler", "DPBoundedScaler", "DPOneHotEncoder", "as_bounds", "broadcast_bounds",
    "histogram_ranges", "scale_to_unit", "unit_map", "zero_kept",
]
