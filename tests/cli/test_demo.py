"""The demo's score table: errors and coverage computed per size and printed in percent."""

import numpy as np
import pandas as pd

from bayescpt.curves.evaluate.scores import percent_text, score


def test_score_per_size_and_its_text_in_percent():
    pred = pd.DataFrame(
        {
            "model_size": [25e6, 25e6, 1e8, 1e8, 1e8],
            "loss": [2.0, 4.0, 3.0, 3.5, 3.0],
            "mean": [2.02, 4.0, 3.03, 3.5, np.nan],  # a row without a prediction is left out
            "lower": [1.9, 4.1, 2.9, 3.4, 2.9],
            "upper": [2.1, 4.2, 3.1, 3.6, 3.1],
        }
    )
    t = score(pred).set_index("model_size")
    assert t.loc["25M", "points"] == 2 and t.loc["100M", "points"] == 2
    assert np.isclose(t.loc["25M", "mean_rel_err"], 0.005)  # (1 % + 0 %) / 2
    assert np.isclose(t.loc["25M", "worst_rel_err"], 0.01)
    assert np.isclose(t.loc["25M", "coverage"], 0.5)  # 4.0 is below [4.1, 4.2]
    text = percent_text(score(pred))
    assert "mean_rel_err_%" in text and "coverage_%" in text
    row = next(line.split() for line in text.splitlines() if line.split()[0] == "25M")
    assert row[2:4] == ["0.500", "1.000"] and row[5] == "50.0"
