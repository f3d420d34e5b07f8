//! The split's identity rules: group labels and keys compared by the one canonical form
//! ([`crate::identity`]), and observations that are the same on both sides of a split.
//!
//! A group-disjoint split is only as disjoint as its labels are distinct to a reader: a group
//! spelled twice (`west` and `wеst` with a Cyrillic е) can sit on both sides while every byte
//! comparison says it does not. And a split whose two sides share an observation (every
//! analysed column equal, under different keys) tests the model on a row it was trained on.

use std::collections::HashMap;

use crate::check::CheckResult;
use crate::identity::ambiguities;
use crate::table::{Dictionary, Table};

/// One analysed field of an observation, as the identity rule compares it.
#[derive(Debug, PartialEq, Eq, Hash)]
enum Field {
    /// A number, by the bits of its value (`-0` read as `0`).
    Number(u64),
    /// Text, by its canonical form.
    Text(String),
}

/// Most rows a finding lists before saying how many more there are.
const LISTED: usize = 10;

/// Where a label or key stands, written out only when it is named.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A line of the table.
    Table(usize),
    /// A line of the split.
    Split(usize),
    /// The dictionary's held-out groups.
    HeldOutGroups,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Table(line) => write!(f, "table line {line}"),
            Place::Split(line) => write!(f, "split line {line}"),
            Place::HeldOutGroups => f.write_str("the dictionary's held_out_groups"),
        }
    }
}

/// Refuses two spellings of one group (the table's and the dictionary's held-out ones) and two
/// spellings of one key (the table's and the split's). `columns` are the table's key and group
/// columns and the split's key column.
pub(crate) fn labels_and_keys(
    table: &Table,
    dictionary: &Dictionary,
    split: &Table,
    (key, group, split_key): (usize, usize, usize),
    result: &mut CheckResult,
) {
    let groups = table
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (&r[group], Place::Table(i + 2)))
        .chain(
            dictionary
                .held_out_groups
                .iter()
                .map(|g| (g.as_str(), Place::HeldOutGroups)),
        );
    for found in crate::identity::group_ambiguities(groups) {
        result.fail(format!(
            "group labels {found}: the split cannot be judged disjoint. Spell each group one \
             way in the table and the dictionary"
        ));
    }
    let keys = table
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| (&r[key], Place::Table(i + 2)))
        .chain(
            split
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (&r[split_key], Place::Split(i + 2))),
        );
    for found in ambiguities(keys) {
        result.fail(format!(
            "keys {found}: it is ambiguous which row each names. Spell each key one way in the \
             table and the split"
        ));
    }
}

/// Marks the split (`partition`: key → `train` or `held_out`) `unverified` when one observation (the outcome and every permitted predictor
/// equal; numbers compared as numbers, text by its canonical form) is on both sides, naming the
/// rows.
pub(crate) fn identical_across(
    table: &Table,
    dictionary: &Dictionary,
    partition: &HashMap<String, String>,
    result: &mut CheckResult,
) {
    let (Some(key), Some(group)) = (
        table.column(&dictionary.primary_key),
        table.column(&dictionary.group),
    ) else {
        return;
    };
    // The analysed columns: the outcome and the permitted predictors (the only columns a
    // model of this split can read).
    let analysed: Vec<usize> = std::iter::once(&dictionary.outcome)
        .chain(&dictionary.predictors)
        .filter_map(|name| table.column(name))
        .filter(|&c| c != key && c != group)
        .collect();
    if analysed.is_empty() {
        return;
    }
    // Observation → (first training row, first held-out row), by line.
    let mut seen: HashMap<Vec<Field>, [Option<usize>; 2]> = HashMap::new();
    for (i, row) in table.rows.iter().enumerate() {
        let side = match partition.get(&row[key]).map(String::as_str) {
            Some("train") => 0,
            Some("held_out") => 1,
            _ => continue,
        };
        // Numbers by their value's bits (the common case, no allocation), else the canonical
        // form of the text.
        let observation: Vec<Field> = analysed
            .iter()
            .map(|&c| match crate::table::number(&row[c]) {
                Some(v) => Field::Number((v + 0.0).to_bits()),
                None => Field::Text(crate::identity::canonical(&row[c])),
            })
            .collect();
        seen.entry(observation).or_default()[side].get_or_insert(i);
    }
    let mut shared: Vec<(usize, usize)> = seen
        .values()
        .filter_map(|sides| Some((sides[0]?, sides[1]?)))
        .collect();
    if shared.is_empty() {
        return;
    }
    shared.sort_unstable();
    let named: Vec<String> = shared
        .iter()
        .take(LISTED)
        .map(|&(train, held)| {
            format!(
                "key {:?} (table line {}, train) and key {:?} (table line {}, held out)",
                &table.rows[train][key],
                train + 2,
                &table.rows[held][key],
                held + 2
            )
        })
        .collect();
    let more = shared.len().saturating_sub(LISTED);
    result.mark_unverified(format!(
        "{} observation(s) are on both sides of the split under different keys (the outcome \
         and every permitted predictor equal): {}{}. The held-out figures would test the model \
         on rows it was trained on; remove the duplicates or say why they are distinct \
         observations",
        shared.len(),
        named.join("; "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ));
}
