//! `_core.pack_budget`.

use mindcore_kernels::packing::{pack, PackMode, PackOptions};
use pyo3::prelude::*;

use crate::convert::{kernel_err, wrong_type};

fn seq<'py, T: FromPyObjectOwned<'py>>(obj: Option<&Bound<'py, PyAny>>, arg: &str, what: &str) -> PyResult<Option<Vec<T>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) if o.is_instance_of::<pyo3::types::PyString>() => {
            Err(wrong_type(format!("{arg}: expected a sequence of {what}, got str")))
        }
        Some(o) => o
            .extract::<Vec<T>>()
            .map(Some)
            .map_err(|e| wrong_type(format!("{arg}: expected a sequence of {what} ({e})"))),
    }
}

/// Chosen item indices in output order; see `mindcore.kernels.pack_budget`.
#[pyfunction]
#[pyo3(signature = (costs, budget, sections, scores, section_budgets, section_max_items, mode))]
#[allow(clippy::too_many_arguments)]
fn pack_budget(
    py: Python<'_>,
    costs: &Bound<'_, PyAny>,
    budget: i64,
    sections: Option<&Bound<'_, PyAny>>,
    scores: Option<&Bound<'_, PyAny>>,
    section_budgets: Option<&Bound<'_, PyAny>>,
    section_max_items: Option<&Bound<'_, PyAny>>,
    mode: &str,
) -> PyResult<Vec<usize>> {
    let costs: Vec<i64> = seq(Some(costs), "costs", "int")?.unwrap_or_default();
    let sections: Option<Vec<i64>> = seq(sections, "sections", "int")?;
    let scores: Option<Vec<f64>> = seq(scores, "scores", "float")?;
    let section_budgets: Option<Vec<Option<i64>>> = seq(section_budgets, "section_budgets", "int or None")?;
    let section_max_items: Option<Vec<Option<i64>>> = seq(section_max_items, "section_max_items", "int or None")?;
    let mode = PackMode::parse(mode).map_err(kernel_err)?;
    py.detach(|| {
        let opts = PackOptions {
            sections: sections.as_deref(),
            scores: scores.as_deref(),
            section_budgets: section_budgets.as_deref(),
            section_max_items: section_max_items.as_deref(),
            mode,
        };
        pack(&costs, budget, &opts)
    })
    .map_err(kernel_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pack_budget, m)?)?;
    Ok(())
}
