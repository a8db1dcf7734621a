//! A differential oracle: run two implementations of the same thing (a
//! system and its reference model, two versions, two configurations) on the
//! same inputs and report the first observation where they disagree.
//!
//! ```
//! use dst_oracles::differential::{Differ, first_divergence};
//!
//! assert!(first_divergence(&[1, 2, 3], &[1, 2, 3]).is_none());
//! let d = first_divergence(&[1, 2, 3], &[1, 5]).unwrap();
//! assert_eq!((d.index, d.left, d.right), (1, Some(&2), Some(&5)));
//!
//! let mut differ = Differ::new();
//! differ.observe("get a", 1, 1);
//! differ.observe("get b", 2, 3);
//! differ.observe("get c", 4, 5); // after the first divergence: ignored
//! let d = differ.finish().unwrap_err();
//! assert_eq!((d.index, d.label.as_deref(), d.left, d.right), (1, Some("get b"), Some(2), Some(3)));
//! ```

use std::fmt::{self, Debug};

use serde::Serialize;

/// The first place two observation sequences differ. `left` or `right` is
/// `None` where that sequence had already ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence<T> {
    /// 0-based position of the observation.
    pub index: usize,
    /// What was observed there, if the observations were labelled.
    pub label: Option<String>,
    pub left: Option<T>,
    pub right: Option<T>,
}

impl<T: Debug> fmt::Display for Divergence<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "observation {}", self.index)?;
        if let Some(label) = &self.label {
            write!(f, " ({label})")?;
        }
        let show = |side: &Option<T>| match side {
            Some(v) => format!("{v:?}"),
            None => "nothing (the sequence ended)".to_string(),
        };
        write!(
            f,
            " differs: left {}, right {}",
            show(&self.left),
            show(&self.right)
        )
    }
}

/// The first index where `left` and `right` differ, including one being
/// longer than the other; `None` if they are equal.
pub fn first_divergence<'a, T: PartialEq>(
    left: &'a [T],
    right: &'a [T],
) -> Option<Divergence<&'a T>> {
    let index = left
        .iter()
        .zip(right)
        .position(|(l, r)| l != r)
        .unwrap_or(left.len().min(right.len()));
    (index < left.len().max(right.len())).then(|| Divergence {
        index,
        label: None,
        left: left.get(index),
        right: right.get(index),
    })
}

/// Compares observations pair by pair as they are made, keeping the first
/// divergence (and nothing else, so it runs in constant memory).
#[derive(Clone, Debug)]
pub struct Differ<T> {
    observed: usize,
    divergence: Option<Divergence<T>>,
}

impl<T> Default for Differ<T> {
    fn default() -> Self {
        Self {
            observed: 0,
            divergence: None,
        }
    }
}

impl<T: PartialEq> Differ<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one pair of observations; true while the two still agree.
    pub fn observe(&mut self, label: impl Into<String>, left: T, right: T) -> bool {
        if self.divergence.is_none() && left != right {
            self.divergence = Some(Divergence {
                index: self.observed,
                label: Some(label.into()),
                left: Some(left),
                right: Some(right),
            });
        }
        self.observed += 1;
        self.divergence.is_none()
    }

    /// Records that only one side made an observation (the other ended or
    /// skipped it): always a divergence.
    pub fn observe_one_sided(
        &mut self,
        label: impl Into<String>,
        left: Option<T>,
        right: Option<T>,
    ) {
        if self.divergence.is_none() {
            self.divergence = Some(Divergence {
                index: self.observed,
                label: Some(label.into()),
                left,
                right,
            });
        }
        self.observed += 1;
    }

    /// How many pairs were observed.
    pub fn observed(&self) -> usize {
        self.observed
    }

    pub fn divergence(&self) -> Option<&Divergence<T>> {
        self.divergence.as_ref()
    }

    /// The number of observations if the two always agreed, else the first
    /// divergence.
    pub fn finish(self) -> Result<usize, Divergence<T>> {
        match self.divergence {
            None => Ok(self.observed),
            Some(d) => Err(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_divergence_finds_the_first_difference_or_a_missing_tail() {
        assert_eq!(first_divergence::<u8>(&[], &[]), None);
        let d = first_divergence(&[1, 2], &[1, 2, 3]).unwrap();
        assert_eq!((d.index, d.left, d.right), (2, None, Some(&3)));
        let d = first_divergence(&["a", "b", "c"], &["a", "x", "y"]).unwrap();
        assert_eq!((d.index, d.left, d.right), (1, Some(&"b"), Some(&"x")));
        assert_eq!(
            d.to_string(),
            r#"observation 1 differs: left "b", right "x""#
        );
    }

    #[test]
    fn differ_keeps_the_first_divergence() {
        let mut differ = Differ::new();
        assert!(differ.observe("a", 1, 1));
        assert!(!differ.observe("b", 2, 3));
        assert!(!differ.observe("c", 5, 5));
        differ.observe_one_sided("d", Some(1), None);
        assert_eq!(differ.observed(), 4);
        let d = differ.finish().unwrap_err();
        assert_eq!((d.index, d.label.as_deref()), (1, Some("b")));
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, r#"{"index":1,"label":"b","left":2,"right":3}"#);

        let mut agreeing = Differ::new();
        agreeing.observe("a", "x", "x");
        assert_eq!(agreeing.finish(), Ok(1));
    }
}
