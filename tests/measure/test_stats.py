"""measure/stats.py: the statistics every measurement shares."""
from __future__ import annotations

import warnings

import numpy as np

from minigraph.measure.stats import nanmedian_last


def test_the_nan_median_is_numpys_value_for_value():
    """Left-out samples are NaN; the bootstrap's own median must give np.nanmedian's values
    exactly (an all-NaN row: NaN), odd and even counts alike."""
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4, 7, 12):
        x = rng.standard_normal((50, 5, n)) * 1e6
        x[rng.random(x.shape) < 0.3] = np.nan
        x[0, 0] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanmedian(x, axis=-1)
        np.testing.assert_array_equal(nanmedian_last(x), want)
