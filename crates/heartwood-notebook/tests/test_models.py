"""Local models from Python and from a notebook in a real kernel: the deployment's trusted
catalog, the review of an entry's exact manifest, a download refused for a licence decision on
another manifest, and the accepted one downloaded from the model hub on loopback with its
progress shown (printed here, a progress bar updated in place in the notebook).

The Rust test `notebook_py.rs` starts the hub and writes the catalog (`HF_ENDPOINT`,
`HEARTWOOD_MODEL_CATALOG`)."""

import os

import pytest

import heartwood
from conftest import run_notebook


def _catalog():
    if not os.environ.get("HEARTWOOD_MODEL_CATALOG") or not os.environ.get("HF_ENDPOINT"):
        pytest.fail("HF_ENDPOINT and HEARTWOOD_MODEL_CATALOG must be set (notebook_py.rs sets them)")


def test_a_catalog_model_is_reviewed_refused_then_downloaded_with_progress(project, capsys):
    _catalog()
    hw = heartwood.open(project)
    catalog = hw.model_catalog()
    ids = {e["id"]: e for e in catalog["entries"]}
    assert ids["huge"]["does_not_fit"], ids["huge"]
    assert "does not fit this machine" in ids["huge"]["label"]
    assert ids["tiny"]["license"] == "apache-2.0"

    review = hw.download_model("tiny")
    assert review["manifest"]["license"] == "apache-2.0"
    assert review["validation"] == "validated"
    assert hw.models()["models"] == [], "a review wrote nothing"
    with pytest.raises(heartwood.HeartwoodError, match="license decision was for manifest"):
        hw.download_model("tiny", accept_license="0" * 64)
    assert hw.models()["transfers"] == [], "a refused decision started nothing"

    listing = hw.download_model("tiny", accept_license=review["manifest_sha256"])
    assert listing["name"] == "tiny" and listing["validation"] == "validated", listing
    printed = capsys.readouterr().out
    assert "download tiny: done (published tiny)" in printed, printed
    assert [e["stored"] for e in hw.model_catalog()["entries"] if e["id"] == "tiny"] == [True]
    hw.close()


def test_a_notebook_shows_the_download_as_a_progress_bar(project):
    _catalog()
    cells = [
        "import heartwood\nhw = heartwood.open()\nreview = hw.download_model('tiny')\n"
        "print(review['manifest_sha256'])",
        "listing = hw.download_model('tiny', accept_license=review['manifest_sha256'])\n"
        "print(listing['validation'])",
    ]
    _, downloaded = run_notebook(cells, project)
    shown = "".join(
        o.get("data", {}).get("text/html", "")
        for o in downloaded.outputs
        if o.get("output_type") in ("display_data", "update_display_data")
    )
    assert "<progress" in shown and "download tiny" in shown, downloaded.outputs
    printed = "".join(o.get("text", "") for o in downloaded.outputs if o.get("output_type") == "stream")
    assert "validated" in printed, downloaded.outputs


def test_an_inspected_repository_is_downloaded_and_a_transfer_cancelled_by_name(project, capsys):
    """Issue 56 item 3, the seed's rule: "The shared transfer manager owns byte progress,
    lifecycle, warnings, cancellation, and results for the terminal, browser, and notebook
    adapters." The notebook downloads a repository inspected at a revision (not only catalog
    entries), and cancels a transfer by the handle every interface lists."""
    _catalog()
    hw = heartwood.open(project)
    review = hw.download_model("heartwood-tests/other-GGUF", revision="main")
    assert review["manifest"]["license"] == "mit", review
    assert review["validation"] == "unvalidated", review
    listing = hw.download_model(
        "heartwood-tests/other-GGUF", revision="main", accept_license=review["manifest_sha256"]
    )
    assert listing["name"] == "other-gguf", listing
    done = [t for t in hw.models()["transfers"] if t["subject"] == "download other-gguf"]
    assert done and done[0]["handle"], hw.models()["transfers"]
    with pytest.raises(heartwood.HeartwoodError, match="is not running"):
        hw.cancel_transfer(done[0]["handle"])
    with pytest.raises(heartwood.HeartwoodError, match="no transfer is named"):
        hw.cancel_transfer("../../escape")
    hw.close()
