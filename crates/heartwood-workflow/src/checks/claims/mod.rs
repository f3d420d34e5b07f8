//! `report_claims`: every figure a written report states is bound to a computed quantity, and
//! is that quantity to the digits written.
//!
//! A report can be long, fluent and wrong in the one way that matters: stating the training
//! fit as held-out performance, an MAE under the name RMSE, or a figure nobody computed. So the
//! report comes with a claims file ([`format`]) that binds each figure (by line and digits) to
//! a quantity: a metric on a sample, a row count, or a coefficient's estimate, standard error,
//! t, p-value or interval bound. The check renders the report as a reader sees it
//! ([`render`]: Markdown, no markup, comments, URLs or hidden HTML), reads every figure by an
//! allow-list ([`text`]: anything else a reader may take for a number is a doubt), reads what
//! the words of its sentence say it is by a small fixed grammar ([`context`]) from sentences
//! whose every word is in the results language (an allow-list of the grammar's terms, the
//! project's names and a few function words; [`words`]), and:
//!
//! - a claim whose line does not state its digits fails;
//! - a number no claim binds, or anything outside the allow-list, is `unverified`, naming it;
//! - a figure Heartwood cannot compute (`other`), or written with a precision that cannot tell
//!   right from wrong (a whole-number R², a decimal comma, one significant digit, a zero), is
//!   `unverified`, saying what to write;
//! - a word outside the results language leaves every figure of its sentence `unverified`,
//!   naming it; words naming another sample, metric, coefficient, statistic or level than the
//!   claim's fail; words naming none, several, or a subset of a sample leave it `unverified`
//!   ([`verdict`]); an interval's bounds and p-value in one sentence must share one reference
//!   distribution;
//! - every other figure is recomputed ([`quantities`]) and judged by the one tolerance rule:
//!   half a unit of its last written digit plus the computation's own rounding (from the size
//!   of the terms it is computed from, never the figure's); digits finer than that rounding
//!   are `unverified`; an estimate's digits must also pin the predictions it implies.
//!
//! It proves the figures a report states follow from the bound files; it says nothing of what
//! the prose around them argues.

mod context;
pub mod format;
mod multivariable;
mod quantities;
mod render;
mod text;
mod uncomputable;
mod verdict;
mod words;

use self::context::Relation;
use self::format::{Claim, ClaimsFile, Quantity};
use self::text::Figure;
use self::uncomputable::Uncomputable;
use super::{Files, strict_json};
use crate::check::{CheckResult, ClaimView, Status};
use crate::registry::Params;

/// How much the recomputation may be off by floating-point rounding, as a share of the size of
/// the terms it is computed from (its own scale, never the figure's size): about 450 unit
/// roundoffs (see `Computed::allowance` in the quantities module).
pub const CLAIM_ROUNDING: f64 = 1e-13;

/// The most a coefficient written within its precision may move every prediction it implies,
/// in training residual scales, before its digits are too few to stand for it.
pub const IMPLIED_SHIFT: f64 = 0.5;

/// `report_claims`: reads report, claims, table, dictionary, split, model report, plan. The
/// model is the univariate line's, or with `model: linear_model` the multivariable model the
/// other parameters (or the plan, `declared_by: plan`) declare, as `linear_model` reads it.
pub fn report_claims(files: Files<'_>, params: &Params, result: &mut CheckResult) {
    let Some(report) = files.first() else {
        return result.fail("the check needs the report");
    };
    let Ok(report) = std::str::from_utf8(report) else {
        return result.fail("the report is not UTF-8 text");
    };
    let claims: ClaimsFile = match files.get(1).map(|b| strict_json(b)) {
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return result.fail(format!(
                "the claims file is not valid ({e}); see docs/workflow-format.md, \"Report claims\""
            ));
        }
        None => return result.fail("the check needs the claims file"),
    };
    let computed = quantities::compute(files.get(2..).unwrap_or_default(), params);
    let vocabulary = computed
        .as_ref()
        .map(quantities::Computed::vocabulary)
        .unwrap_or_default();
    let rendered = render::render(report);
    for line in &rendered.html_lines {
        result.mark_unverified(format!(
            "line {line}: raw HTML, which a browser may show, hide or restyle, so no figure near \
             it can be read as a reader sees it; write the report in Markdown only"
        ));
    }
    let read = text::figures(&rendered, &vocabulary);
    for doubt in &read.doubts {
        result.mark_unverified(doubt.clone());
    }
    let figures = read.figures;
    let mut bound: Vec<Option<usize>> = vec![None; figures.len()];
    let mut pairs: Vec<(&Claim, usize)> = Vec::new();
    for (n, claim) in claims.claims.iter().enumerate() {
        let digits = text::fold(&claim.value).trim().to_owned();
        let found = figures
            .iter()
            .enumerate()
            .position(|(i, f)| bound[i].is_none() && f.line == claim.line && f.written == digits);
        match found {
            Some(i) => {
                bound[i] = Some(n);
                pairs.push((claim, i));
            }
            None => {
                let on_line: Vec<&str> = figures
                    .iter()
                    .filter(|f| f.line == claim.line)
                    .map(|f| f.written.as_str())
                    .collect();
                result.fail(format!(
                    "claim {} says line {} of the report states {:?}, but it does not (the \
                     figures read on that line: {})",
                    n + 1,
                    claim.line,
                    claim.value,
                    if on_line.is_empty() {
                        "none".to_owned()
                    } else {
                        on_line.join(", ")
                    }
                ));
            }
        }
    }
    for (i, figure) in figures.iter().enumerate() {
        if bound[i].is_none() {
            result.mark_unverified(format!(
                "line {}: the figure {} is bound to no claim, so nothing says what it is or \
                 checks it: “{}”. Add a claim for it (quantity `other` if Heartwood cannot \
                 compute it)",
                figure.line, figure.written, figure.quote
            ));
        }
    }
    let mixed = mixed_conventions(&pairs, &figures, &computed);
    for (claim, i) in pairs {
        let mut view = judge(claim, &figures[i], &computed);
        if view.status == Status::Passed
            && let Some(why) = mixed.iter().find(|(at, _)| *at == i).map(|(_, w)| w)
        {
            view.status = Status::Failed;
            view.note = format!(
                "line {}: {} {}: {why}: “{}”",
                figures[i].line, view.quantity, figures[i].written, figures[i].quote
            );
        }
        view.text = format!(
            "line {}: {} is {}, recomputed {}: {}",
            view.line,
            view.written,
            view.quantity,
            view.recomputed.as_deref().unwrap_or("(not computable)"),
            view.status
        );
        match view.status {
            Status::Failed => result.fail(view.note.clone()),
            Status::Unverified => result.mark_unverified(view.note.clone()),
            Status::Passed => {}
        }
        result.claims.push(view);
    }
}

/// Whether `figure` agrees with the recomputed value `v` of `claim` by the tolerance rule.
fn agrees(claim: &Claim, figure: &Figure, computed: &quantities::Computed, v: f64) -> bool {
    let scale = if figure.percent { 0.01 } else { 1.0 };
    let (value, half_unit) = (figure.value * scale, figure.half_unit * scale);
    let rounding = computed.allowance(claim, v);
    match figure.reading.relation {
        Relation::Equal => (value - v).abs() <= half_unit + rounding,
        Relation::Below => v < value + rounding,
        Relation::Above => v > value - rounding,
    }
}

/// The figures of one coefficient that depend on the reference distribution (its interval
/// bounds and p-value) stated in one sentence must all be one distribution's: a lower bound
/// from the normal and an upper bound from Student's t is no interval anyone computed, and a
/// normal interval beside a t p-value is two conventions. Returns, for each figure of such a
/// sentence that no single convention gives together with the others, why.
fn mixed_conventions(
    pairs: &[(&Claim, usize)],
    figures: &[Figure],
    computed: &Result<quantities::Computed, Uncomputable>,
) -> Vec<(usize, String)> {
    let Ok(computed) = computed else {
        return Vec::new();
    };
    let depends =
        |q: Quantity| matches!(q, Quantity::CiLower | Quantity::CiUpper | Quantity::PValue);
    let mut out = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for &(first, f) in pairs.iter().filter(|(c, _)| depends(c.quantity)) {
        if seen.contains(&f) {
            continue;
        }
        let group: Vec<(&Claim, usize)> = pairs
            .iter()
            .filter(|(c, i)| {
                depends(c.quantity)
                    && c.coefficient == first.coefficient
                    && figures[*i].line == figures[f].line
                    && figures[*i].quote == figures[f].quote
            })
            .copied()
            .collect();
        seen.extend(group.iter().map(|(_, i)| *i));
        if group.len() < 2 {
            continue;
        }
        let mut fits: Vec<Vec<bool>> = Vec::new();
        let mut values: Vec<String> = Vec::new();
        for &(claim, i) in &group {
            let Ok(candidates) = computed.value(claim) else {
                break;
            };
            fits.push(
                candidates
                    .iter()
                    .map(|&v| agrees(claim, &figures[i], computed, v))
                    .collect(),
            );
            values.push(format!(
                "{} for {}",
                fmt_all(&candidates),
                figures[i].written
            ));
        }
        let width = fits.first().map_or(0, Vec::len);
        if fits.len() != group.len() || fits.iter().any(|f| f.len() != width) {
            continue;
        }
        let each_fits = fits.iter().all(|f| f.contains(&true));
        let one_convention = (0..width).any(|k| fits.iter().all(|f| f[k]));
        if each_fits && !one_convention {
            let why = format!(
                "these figures of one coefficient take two reference distributions (each \
                 convention in turn gives {}); no one convention gives them all, so state one \
                 convention's figures",
                values.join("; ")
            );
            out.extend(group.iter().map(|&(_, i)| (i, why.clone())));
        }
    }
    out
}

fn fmt_all(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.6}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What a claim says a figure is, in words.
fn describe(claim: &Claim) -> String {
    let what = claim.quantity.name();
    if claim.quantity.is_coefficient() {
        let name = claim.coefficient.as_deref().unwrap_or("?");
        let level = match claim.quantity {
            Quantity::CiLower | Quantity::CiUpper => {
                format!(" ({}%)", claim.level.unwrap_or(0.95) * 100.0)
            }
            _ => String::new(),
        };
        return format!("{name} {what}{level}");
    }
    match claim.sample {
        Some(sample) if claim.quantity != Quantity::Other => format!("{} {what}", sample.name()),
        _ => claim
            .note
            .clone()
            .map_or_else(|| what.to_owned(), |note| format!("{what} ({note})")),
    }
}

/// Judges one bound figure: its precision, its words, then its value.
fn judge(
    claim: &Claim,
    figure: &Figure,
    computed: &Result<quantities::Computed, Uncomputable>,
) -> ClaimView {
    let mut view = ClaimView {
        line: claim.line as u64,
        written: figure.written.clone(),
        quantity: describe(claim),
        recomputed: None,
        status: Status::Unverified,
        note: String::new(),
        text: String::new(),
    };
    let at = format!("line {}: {} {}", figure.line, view.quantity, figure.written);
    let quote = &figure.quote;
    if let Some(why) = precision(claim, figure) {
        view.note = format!("{at}: {why}: “{quote}”");
        return view;
    }
    let computed = match computed {
        Ok(c) => c,
        Err(why) => {
            view.note = format!("{at}: cannot be recomputed: {why}");
            return view;
        }
    };
    let names = computed.names();
    let bound = verdict::Bound {
        coefficient: claim
            .coefficient
            .as_deref()
            .and_then(|c| computed.coefficient(c)),
        names: &names,
        std_errors: computed.std_errors(),
    };
    if let Some((status, why)) = verdict::verdict(claim, &figure.reading, &bound) {
        view.status = status;
        view.note = format!("{at}: {why}: “{quote}”");
        return view;
    }
    let candidates = match computed.value(claim) {
        Ok(c) => c,
        Err(why) => {
            view.note = format!("{at}: {why}: “{quote}”");
            return view;
        }
    };
    view.recomputed = Some(
        candidates
            .iter()
            .map(|v| format!("{v:.6}"))
            .collect::<Vec<_>>()
            .join(" or "),
    );
    let scale = if figure.percent { 0.01 } else { 1.0 };
    let (value, half_unit) = (figure.value * scale, figure.half_unit * scale);
    let relation = figure.reading.relation;
    let Some(&matched) = candidates
        .iter()
        .find(|&&v| agrees(claim, figure, computed, v))
    else {
        let rounding = candidates
            .iter()
            .map(|&v| computed.allowance(claim, v))
            .fold(0.0, f64::max);
        view.status = Status::Failed;
        view.note = format!(
            "{at}: the report states {}{}, but recomputation gives {}{}: “{quote}”",
            match relation {
                Relation::Equal => "",
                Relation::Below => "< ",
                Relation::Above => "> ",
            },
            figure.written,
            view.recomputed.as_deref().unwrap_or_default(),
            other_sample_hint(claim, value, half_unit + rounding, computed)
        );
        return view;
    };
    let rounding = computed.allowance(claim, matched);
    if relation == Relation::Equal && half_unit < rounding {
        view.note = format!(
            "{at}: it is written to {half_unit:e} (half its last digit), finer than the \
             computation's own rounding ({rounding:.1e}, from the size of the terms it is \
             computed from), so its last digits cannot be checked; write fewer: “{quote}”"
        );
        return view;
    }
    if let Some(why) = implied_shift(claim, half_unit, matched, computed) {
        view.note = format!("{at}: {why}: “{quote}”");
        return view;
    }
    view.status = Status::Passed;
    view
}

/// Why a figure's writing cannot tell a right value from a wrong one, if it cannot.
fn precision(claim: &Claim, figure: &Figure) -> Option<String> {
    let q = claim.quantity;
    if q == Quantity::Other {
        return Some("Heartwood cannot compute this figure, so it is not checked".into());
    }
    if figure.comma {
        return Some(format!(
            "a comma in a number is a decimal comma to some readers and digit grouping to \
             others; write it with a decimal point and no grouping (for example {})",
            figure.written.replace(',', ".")
        ));
    }
    if figure.percent && !q.is_fraction() {
        return Some(format!(
            "a {} is not a percentage; write it in the outcome's units",
            q.name()
        ));
    }
    if q == Quantity::N && (figure.fractional || figure.value.fract() != 0.0) {
        return Some(
            "a count is a whole number written without a decimal point or exponent (9, not \
             9.0 or 9.000000001)"
                .into(),
        );
    }
    let scale = if figure.percent { 0.01 } else { 1.0 };
    let (value, half_unit) = (figure.value * scale, figure.half_unit * scale);
    if q.is_fraction() && half_unit >= 0.5 {
        return Some(format!(
            "a whole number cannot tell a right {} from a wrong one (every value from {} to {} \
             rounds to it); write at least two decimals (for example 0.31) or a percentage",
            q.name(),
            value - half_unit,
            value + half_unit
        ));
    }
    let coarse = half_unit >= 0.05 * value.abs() && value != 0.0;
    if coarse && !matches!(q, Quantity::N | Quantity::PValue) {
        return Some(format!(
            "written to fewer than two significant digits, it cannot tell a right {} from a \
             wrong one (every value from {} to {} rounds to it); write at least two",
            q.name(),
            value - half_unit,
            value + half_unit
        ));
    }
    if value == 0.0 && figure.reading.relation == Relation::Equal && q != Quantity::N {
        return Some(format!(
            "written as zero, its digits cannot tell the {} from any value within {half_unit} \
             of zero; write it to its first significant digit",
            q.name()
        ));
    }
    None
}

/// When a figure is wrong for its sample but right for another, says so.
fn other_sample_hint(
    claim: &Claim,
    value: f64,
    allowed: f64,
    computed: &quantities::Computed,
) -> String {
    use format::Sample;
    for other in [Sample::Training, Sample::HeldOut, Sample::All] {
        if Some(other) == claim.sample || claim.sample.is_none() {
            continue;
        }
        let mut moved = claim.clone();
        moved.sample = Some(other);
        if let Ok(values) = computed.value(&moved)
            && values.iter().any(|v| (value - v).abs() <= allowed)
        {
            return format!(
                " (it is the {} figure, stated as the {} one)",
                other.name(),
                claim.sample.map_or("", format::Sample::name)
            );
        }
    }
    String::new()
}

/// For a coefficient's estimate: whether the digits written (half a unit of the last one either
/// way) leave every prediction it implies uncertain by more than [`IMPLIED_SHIFT`] residual
/// scales.
fn implied_shift(
    claim: &Claim,
    half_unit: f64,
    recomputed: f64,
    computed: &quantities::Computed,
) -> Option<String> {
    if claim.quantity != Quantity::Estimate {
        return None;
    }
    let index = computed.coefficient(claim.coefficient.as_deref()?)?;
    let (per_unit, residual) = computed.shift_scales(index)?;
    let shift = half_unit * per_unit;
    if residual > 0.0 && shift > IMPLIED_SHIFT * residual {
        let needed = ((IMPLIED_SHIFT * 0.1 * residual / per_unit).log10().floor()).abs();
        return Some(format!(
            "the digits written may stand for any value within {half_unit} of it (the true \
             value is {recomputed}), which moves every prediction it implies by up to {:.2} \
             residual scales ({shift:.3e}; a logistic model's scale is one unit of log-odds); \
             write it to at least {needed} decimals",
            shift / residual
        ));
    }
    None
}
