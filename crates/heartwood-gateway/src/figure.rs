//! Pictures of a workflow run's evidence, drawn by the gateway from the bytes its checks read,
//! never from the model's prose: the fitted model (training and held-out points, the reported
//! line, the held-out predictions, the training-mean comparator) and the leave-one-group-out
//! slopes beside the full-data slope.
//!
//! A picture is made on request and never journaled (it is the research data itself); it is
//! drawn only while the files still have the digests the assessment recorded, so it always
//! shows what the checks judged.

use heartwood_events::workflow::{
    FigureValue, GroupSlopeView, InspectedFile, ModelFigure, WorkflowView,
};
use plotters::prelude::*;

use crate::workspace::WorkspaceService;
use crate::{GatewayError, ProjectContext};

/// Figure size in SVG pixels: a model panel and a slope strip below it.
const WIDTH: u32 = 640;
const MODEL_HEIGHT: u32 = 400;
const SLOPES_HEIGHT: u32 = 120;

/// The model picture for the run's current assessment when it judged a model, else for the
/// model stage accepted last. `Ok(None)` when no model has been judged yet; an error when the
/// files changed since they were judged (evaluate again) or cannot be read.
pub(crate) fn model_figure(
    project: &ProjectContext,
    w: &WorkflowView,
) -> Result<Option<ModelFigure>, GatewayError> {
    let definition = crate::workflow_run::bound_definition(project, w)?;
    let service = WorkspaceService::open(project)?;
    let current = w.assessment.as_ref().and_then(|a| {
        let judged = a.checks.iter().find(|c| c.check == "univariate_ols")?;
        Some((a.stage.clone(), judged.inspected.clone()))
    });
    // Once the model stage is accepted, the run's checks move on to the next stage; what was
    // accepted is still what the picture shows.
    let accepted = || {
        w.stages
            .iter()
            .rev()
            .filter(|s| s.status == heartwood_events::workflow::StageStatus::Accepted)
            .find(|s| service.model_series(&definition, &s.spec.id).is_some())
            .map(|s| (s.spec.id.clone(), s.accepted_evidence.clone()))
    };
    let Some((stage, judged)) = current.or_else(accepted) else {
        return Ok(None);
    };
    let Some(read) = service.model_series(&definition, &stage) else {
        return Ok(None);
    };
    let (series, digests) = read?;
    let inspected: Vec<InspectedFile> = digests
        .iter()
        .map(|d| InspectedFile {
            path: d.path.clone(),
            sha256: Some(d.sha256.clone()),
        })
        .collect();
    if !inspected.iter().all(|file| judged.contains(file)) {
        return Err(GatewayError::Drifted {
            what: "the model's files".into(),
            since: "its checks ran",
            consequence: "a picture of them would not show what was judged; evaluate the stage \
                          again",
        });
    }
    let xs = series
        .train
        .iter()
        .chain(&series.held_out)
        .map(|p| p.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let at = |x: f64| [x, series.intercept + series.slope * x];
    let mut figure = ModelFigure {
        stage,
        predictor: series.predictor.clone(),
        outcome: series.outcome.clone(),
        train: series.train.iter().map(|&(x, y)| [x, y]).collect(),
        held_out: series.held_out.iter().map(|&(x, y)| [x, y]).collect(),
        predictions: series.predictions.iter().map(|&(x, y)| [x, y]).collect(),
        line: [at(xs.0), at(xs.1)],
        x_range: [0.0, 1.0],
        y_range: [0.0, 1.0],
        training_mean: series.training_mean,
        slope: series.slope,
        group_slopes: series
            .group_slopes
            .iter()
            .map(|(group, slope)| GroupSlopeView {
                group: group.clone(),
                slope: *slope,
            })
            .collect(),
        inspected,
        values: values(&series.recomputed),
        svg: String::new(),
    };
    let points = || {
        figure
            .train
            .iter()
            .chain(&figure.held_out)
            .chain(&figure.predictions)
    };
    let (x0, x1) = span(points().map(|p| p[0]));
    let (y0, y1) = span(points().map(|p| p[1]).chain([
        figure.training_mean,
        figure.line[0][1],
        figure.line[1][1],
    ]));
    figure.x_range = [x0, x1];
    figure.y_range = [y0, y1];
    figure.svg = svg(&figure).map_err(GatewayError::Drawing)?;
    Ok(Some(figure))
}

/// The figure as SVG: the model panel above, the slope strip below.
pub(crate) fn svg(f: &ModelFigure) -> Result<String, DrawingAreaErrorKind<std::io::Error>> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, MODEL_HEIGHT + SLOPES_HEIGHT))
            .into_drawing_area();
        root.fill(&WHITE)?;
        let (model, slopes) = root.split_vertically(MODEL_HEIGHT);
        draw_model(&model, f)?;
        draw_slopes(&slopes, f)?;
        root.present()?;
    }
    Ok(out)
}

/// Colours: training points grey, held-out points and their predictions blue and orange,
/// the fitted line dark, the comparator dashed-looking grey.
const TRAIN: RGBColor = RGBColor(120, 120, 120);
const HELD_OUT: RGBColor = RGBColor(31, 119, 180);
const PREDICTED: RGBColor = RGBColor(230, 120, 20);
const FITTED: RGBColor = RGBColor(30, 30, 30);
const MEAN: RGBColor = RGBColor(170, 170, 170);

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_model(area: &Area<'_>, f: &ModelFigure) -> DrawResult {
    let ([x0, x1], [y0, y1]) = (f.x_range, f.y_range);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} against {}", f.outcome, f.predictor),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(48)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc(f.predictor.as_str())
        .y_desc(f.outcome.as_str())
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(WHITE)
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(x0, f.training_mean), (x1, f.training_mean)],
            MEAN.stroke_width(2),
        ))?
        .label("training mean (comparator)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], MEAN.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            f.line.iter().map(|p| (p[0], p[1])),
            FITTED.stroke_width(2),
        ))?
        .label("fitted line")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], FITTED.stroke_width(2)));
    chart
        .draw_series(
            f.train
                .iter()
                .map(|p| Circle::new((p[0], p[1]), 3, TRAIN.filled())),
        )?
        .label("training")
        .legend(|(x, y)| Circle::new((x + 8, y), 3, TRAIN.filled()));
    chart
        .draw_series(
            f.held_out
                .iter()
                .map(|p| Circle::new((p[0], p[1]), 4, HELD_OUT.filled())),
        )?
        .label("held out")
        .legend(|(x, y)| Circle::new((x + 8, y), 4, HELD_OUT.filled()));
    chart
        .draw_series(
            f.predictions
                .iter()
                .map(|p| Cross::new((p[0], p[1]), 5, PREDICTED.stroke_width(2))),
        )?
        .label("held-out prediction")
        .legend(|(x, y)| Cross::new((x + 8, y), 5, PREDICTED.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(MEAN)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

fn draw_slopes(area: &Area<'_>, f: &ModelFigure) -> DrawResult {
    let (x0, x1) = span(f.group_slopes.iter().map(|g| g.slope).chain([f.slope]));
    let mut chart = ChartBuilder::on(area)
        .caption(
            "slope without each group (line: all training rows)",
            ("sans-serif", 14),
        )
        .margin(12)
        .x_label_area_size(24)
        .y_label_area_size(48)
        .build_cartesian_2d(x0..x1, 0.0..1.0)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(6)
        .x_label_style(("sans-serif", 13))
        .light_line_style(WHITE)
        .draw()?;
    chart.draw_series(LineSeries::new(
        [(f.slope, 0.0), (f.slope, 1.0)],
        FITTED.stroke_width(2),
    ))?;
    chart.draw_series(f.group_slopes.iter().map(|g| {
        EmptyElement::at((g.slope, 0.5))
            + Circle::new((0, 0), 4, HELD_OUT.filled())
            + Text::new(g.group.clone(), (6, -16), ("sans-serif", 13))
    }))?;
    Ok(())
}

/// The check's recomputed figures worth reading beside the picture, in the order a reader
/// weighs them: the effect, then whether it predicts better than the comparator, then on how
/// many rows. A figure the check could not compute is left out rather than shown as blank.
fn values(recomputed: &serde_json::Value) -> Vec<FigureValue> {
    const SHOWN: [(&str, &str); 7] = [
        ("slope", "slope (training rows)"),
        ("intercept", "intercept"),
        ("held_out_rmse", "held-out RMSE"),
        ("mean_comparator_rmse", "held-out RMSE of the training mean"),
        ("held_out_r2", "held-out R² (against the training mean)"),
        ("training_rows", "training rows"),
        ("held_out_rows", "held-out rows"),
    ];
    SHOWN
        .iter()
        .filter_map(|(key, label)| {
            let value = recomputed.get(key)?;
            let written = match value.as_u64() {
                Some(count) => count.to_string(),
                None => significant(value.as_f64()?),
            };
            Some(FigureValue {
                label: (*label).to_owned(),
                value: written,
            })
        })
        .collect()
}

/// `v` to four significant digits, in scientific form when very large or small.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return v.to_string();
    }
    if v.abs() < 1e-3 || v.abs() >= 1e6 {
        return format!("{v:.3e}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// The range of `values` with a margin, never empty.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs().max(1.0) * 1e-3);
    (lo - pad, hi + pad)
}
