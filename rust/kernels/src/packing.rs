//! Budget packing: choose items by section order and score under token budgets.
//!
//! Items carry a token cost, an optional score and a section. Sections are visited in
//! ascending order; inside a section items go by score (descending, ties by lower index) or,
//! without scores, in the given order. Every pick must fit the overall budget, the section's
//! token cap and the section's item cap. What happens to an item that does not fit is the mode:
//!
//! * [`PackMode::FirstFitStop`]: the section ends there (the Agent Mind header rule: a
//!   belief that does not fit ends the beliefs; the reflections still get a try), so what a
//!   section shows is always a prefix of its ranking.
//! * [`PackMode::BestFit`]: the item is skipped and smaller ones after it may still fit.

use std::cmp::Ordering;

use crate::error::{KernelError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PackMode {
    #[default]
    FirstFitStop,
    BestFit,
}

impl PackMode {
    /// `"first_fit_stop"` or `"best_fit"`.
    pub fn parse(mode: &str) -> Result<Self> {
        match mode {
            "first_fit_stop" => Ok(PackMode::FirstFitStop),
            "best_fit" => Ok(PackMode::BestFit),
            other => Err(KernelError::invalid(
                "mode",
                format!("must be \"first_fit_stop\" or \"best_fit\", got {other:?}"),
            )),
        }
    }
}

/// Everything but the costs and the overall budget; `None` means the default described on
/// each field.
#[derive(Debug, Clone, Copy, Default)]
pub struct PackOptions<'a> {
    /// Section of each item (>= 0); default: all in section 0.
    pub sections: Option<&'a [i64]>,
    /// Score of each item (finite); default: keep the given order.
    pub scores: Option<&'a [f64]>,
    /// Token cap per section, indexed by section (`None` entry = uncapped).
    pub section_budgets: Option<&'a [Option<i64>]>,
    /// Item cap per section, indexed by section (`None` entry = uncapped).
    pub section_max_items: Option<&'a [Option<i64>]>,
    pub mode: PackMode,
}

fn check_len(arg: &'static str, got: usize, want: usize) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(KernelError::invalid(arg, format!("has {got} entries but costs has {want}")))
    }
}

/// Looks up a per-section cap; a table must cover every section that has items.
fn caps(arg: &'static str, table: Option<&[Option<i64>]>, max_section: Option<usize>) -> Result<Vec<Option<u64>>> {
    let Some(table) = table else { return Ok(Vec::new()) };
    if let Some(m) = max_section {
        if table.len() <= m {
            return Err(KernelError::invalid(
                arg,
                format!("has {} entries but sections uses section {m}", table.len()),
            ));
        }
    }
    table
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            Some(v) if *v < 0 => Err(KernelError::invalid(arg, format!("entry {i} is negative ({v})"))),
            Some(v) => Ok(Some(*v as u64)),
            None => Ok(None),
        })
        .collect()
}

/// The chosen item indices in output order (section ascending, then rank within the section).
/// Never exceeds `budget`, a section's token cap or its item cap.
pub fn pack(costs: &[i64], budget: i64, opts: &PackOptions<'_>) -> Result<Vec<usize>> {
    let n = costs.len();
    if budget < 0 {
        return Err(KernelError::invalid("budget", format!("must be >= 0, got {budget}")));
    }
    if let Some((i, c)) = costs.iter().enumerate().find(|(_, c)| **c < 0) {
        return Err(KernelError::invalid("costs", format!("must be >= 0, item {i} costs {c}")));
    }
    let mut section = vec![0usize; n];
    if let Some(s) = opts.sections {
        check_len("sections", s.len(), n)?;
        for (i, &v) in s.iter().enumerate() {
            section[i] = usize::try_from(v)
                .map_err(|_| KernelError::invalid("sections", format!("must be >= 0, item {i} has section {v}")))?;
        }
    }
    if let Some(s) = opts.scores {
        check_len("scores", s.len(), n)?;
        if let Some((i, v)) = s.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(KernelError::invalid("scores", format!("must be finite, item {i} is {v}")));
        }
    }
    let max_section = section.iter().copied().max();
    let tok_caps = caps("section_budgets", opts.section_budgets, max_section)?;
    let item_caps = caps("section_max_items", opts.section_max_items, max_section)?;

    let mut order: Vec<usize> = (0..n).collect();
    // Stable sort: equal (section, score) keeps the lower index first.
    order.sort_by(|&a, &b| {
        section[a].cmp(&section[b]).then_with(|| match opts.scores {
            Some(s) => s[b].partial_cmp(&s[a]).unwrap_or(Ordering::Equal),
            None => Ordering::Equal,
        })
    });

    let mut left = budget as u64;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < n {
        let sec = section[order[pos]];
        let end = pos + order[pos..].iter().take_while(|&&i| section[i] == sec).count();
        let mut sec_left = tok_caps.get(sec).copied().flatten().unwrap_or(u64::MAX);
        let mut items_left = item_caps.get(sec).copied().flatten().unwrap_or(u64::MAX);
        for &i in &order[pos..end] {
            if items_left == 0 {
                break;
            }
            let cost = costs[i] as u64;
            if cost <= left.min(sec_left) {
                out.push(i);
                left -= cost;
                sec_left -= cost;
                items_left -= 1;
            } else if opts.mode == PackMode::FirstFitStop {
                break;
            }
        }
        pos = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts<'a>(mode: PackMode) -> PackOptions<'a> {
        PackOptions { mode, ..Default::default() }
    }

    #[test]
    fn first_fit_stop_ends_the_section_best_fit_skips() {
        let costs = [5, 10, 2, 1];
        assert_eq!(pack(&costs, 8, &opts(PackMode::FirstFitStop)).unwrap(), [0]);
        assert_eq!(pack(&costs, 8, &opts(PackMode::BestFit)).unwrap(), [0, 2, 3]);
    }

    #[test]
    fn next_section_still_gets_a_try() {
        let costs = [5, 10, 2, 1];
        let sections = [0, 0, 1, 1];
        let o = PackOptions { sections: Some(&sections), ..Default::default() };
        assert_eq!(pack(&costs, 8, &o).unwrap(), [0, 2, 3]);
        // Sections come out in ascending order whatever the input order.
        let sections = [1, 1, 0, 0];
        let o = PackOptions { sections: Some(&sections), ..Default::default() };
        assert_eq!(pack(&costs, 8, &o).unwrap(), [2, 3, 0]);
    }

    #[test]
    fn scores_order_within_section_ties_by_index() {
        let costs = [1, 1, 1, 1];
        let scores = [0.5, 0.9, 0.5, 0.1];
        let o = PackOptions { scores: Some(&scores), ..Default::default() };
        assert_eq!(pack(&costs, 3, &o).unwrap(), [1, 0, 2]);
    }

    #[test]
    fn section_caps() {
        let costs = [3, 3, 3, 3, 0];
        let sections = [0, 0, 1, 1, 1];
        let budgets = [Some(4), None];
        let items = [None, Some(1)];
        let o = PackOptions {
            sections: Some(&sections),
            section_budgets: Some(&budgets),
            section_max_items: Some(&items),
            ..Default::default()
        };
        assert_eq!(pack(&costs, 100, &o).unwrap(), [0, 2]);
        // Zero-cost items fit an exhausted budget.
        assert_eq!(pack(&[0, 0], 0, &PackOptions::default()).unwrap(), [0, 1]);
    }

    #[test]
    fn rejects_bad_input() {
        let err = |r: Result<Vec<usize>>| match r {
            Err(KernelError::Invalid { arg, .. }) => arg,
            Ok(v) => panic!("accepted: {v:?}"),
        };
        let d = PackOptions::default();
        assert_eq!(err(pack(&[1], -1, &d)), "budget");
        assert_eq!(err(pack(&[-1], 1, &d)), "costs");
        assert_eq!(err(pack(&[1], 1, &PackOptions { sections: Some(&[0, 1]), ..d })), "sections");
        assert_eq!(err(pack(&[1], 1, &PackOptions { sections: Some(&[-2]), ..d })), "sections");
        assert_eq!(err(pack(&[1], 1, &PackOptions { scores: Some(&[f64::NAN]), ..d })), "scores");
        let s = [0, 2];
        let b = [Some(1), None];
        let o = PackOptions { sections: Some(&s), section_budgets: Some(&b), ..d };
        assert_eq!(err(pack(&[1, 1], 1, &o)), "section_budgets");
        let m = [Some(-1)];
        let o = PackOptions { section_max_items: Some(&m), ..d };
        assert_eq!(err(pack(&[1], 1, &o)), "section_max_items");
        assert!(PackMode::parse("greedy").is_err());
        assert!(pack(&[], 0, &d).unwrap().is_empty());
    }
}
