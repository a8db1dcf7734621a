//! What an assertion claims, and when one evaluation breaks it.

/// What an assertion (or fault point) claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Kind {
    Always,
    AlwaysOrUnreachable,
    Sometimes,
    Reachable,
    Unreachable,
    AlwaysGreaterThan,
    AlwaysGreaterThanOrEqualTo,
    AlwaysLessThan,
    AlwaysLessThanOrEqualTo,
    SometimesGreaterThan,
    SometimesGreaterThanOrEqualTo,
    SometimesLessThan,
    SometimesLessThanOrEqualTo,
    AlwaysSome,
    SometimesAll,
    /// A `dst::fault!` point: not a property, listed so reports can name it.
    Fault,
}

/// How a kind is judged over a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// True every time; must be reached at least once.
    Always,
    /// True every time; never reaching it is fine.
    AlwaysOrUnreachable,
    /// True at least once.
    Sometimes,
    /// Must be reached.
    Reachable,
    /// Must never be reached.
    Unreachable,
    /// Not a property.
    None,
}

impl Kind {
    pub fn claim(self) -> Claim {
        use Kind::*;
        match self {
            Always
            | AlwaysGreaterThan
            | AlwaysGreaterThanOrEqualTo
            | AlwaysLessThan
            | AlwaysLessThanOrEqualTo
            | AlwaysSome => Claim::Always,
            AlwaysOrUnreachable => Claim::AlwaysOrUnreachable,
            Sometimes
            | SometimesGreaterThan
            | SometimesGreaterThanOrEqualTo
            | SometimesLessThan
            | SometimesLessThanOrEqualTo
            | SometimesAll => Claim::Sometimes,
            Reachable => Claim::Reachable,
            Unreachable => Claim::Unreachable,
            Fault => Claim::None,
        }
    }

    /// Whether one evaluation with this condition breaks the property.
    /// (For reachable and unreachable the condition is "reached", so `true`.)
    #[inline]
    pub fn fails_on(self, condition: bool) -> bool {
        match self.claim() {
            Claim::Always | Claim::AlwaysOrUnreachable => !condition,
            Claim::Unreachable => true,
            _ => false,
        }
    }

    /// Whether the property must be reached in a campaign (Antithesis' `must_hit`).
    pub fn must_hit(self) -> bool {
        matches!(
            self.claim(),
            Claim::Always | Claim::Sometimes | Claim::Reachable
        )
    }

    /// The snake_case name used in JSON and reports.
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Always => "always",
            AlwaysOrUnreachable => "always_or_unreachable",
            Sometimes => "sometimes",
            Reachable => "reachable",
            Unreachable => "unreachable",
            AlwaysGreaterThan => "always_greater_than",
            AlwaysGreaterThanOrEqualTo => "always_greater_than_or_equal_to",
            AlwaysLessThan => "always_less_than",
            AlwaysLessThanOrEqualTo => "always_less_than_or_equal_to",
            SometimesGreaterThan => "sometimes_greater_than",
            SometimesGreaterThanOrEqualTo => "sometimes_greater_than_or_equal_to",
            SometimesLessThan => "sometimes_less_than",
            SometimesLessThanOrEqualTo => "sometimes_less_than_or_equal_to",
            AlwaysSome => "always_some",
            SometimesAll => "sometimes_all",
            Fault => "fault",
        }
    }

    /// The kind of `dst.h`'s number `DST_KIND_*`.
    pub fn from_c(number: u16) -> Option<Kind> {
        use Kind::*;
        Some(match number {
            1 => Always,
            2 => AlwaysOrUnreachable,
            3 => Sometimes,
            4 => Reachable,
            5 => Unreachable,
            6 => AlwaysGreaterThan,
            7 => AlwaysGreaterThanOrEqualTo,
            8 => AlwaysLessThan,
            9 => AlwaysLessThanOrEqualTo,
            10 => SometimesGreaterThan,
            11 => SometimesGreaterThanOrEqualTo,
            12 => SometimesLessThan,
            13 => SometimesLessThanOrEqualTo,
            14 => AlwaysSome,
            15 => SometimesAll,
            16 => Fault,
            _ => return None,
        })
    }

    /// The guidance score of a numeric assertion whose `left - right` is
    /// `distance`: lower is closer to making a `sometimes` true or an
    /// `always` false.
    #[inline]
    pub fn score(self, distance: f64) -> f64 {
        use Kind::*;
        match self {
            SometimesGreaterThan
            | SometimesGreaterThanOrEqualTo
            | AlwaysLessThan
            | AlwaysLessThanOrEqualTo => -distance,
            _ => distance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_c_number_names_a_kind_and_must_hold_kinds_fail_when_false() {
        let kinds: [Kind; 16] = core::array::from_fn(|i| Kind::from_c(i as u16 + 1).unwrap());
        assert_eq!(Kind::from_c(0), None);
        assert_eq!(Kind::from_c(17), None);
        for kind in kinds {
            let must_hold = matches!(kind.claim(), Claim::Always | Claim::AlwaysOrUnreachable);
            assert_eq!(
                kind.fails_on(false),
                must_hold || kind == Kind::Unreachable,
                "{kind:?}"
            );
        }
        assert!(
            Kind::AlwaysSome.fails_on(false),
            "an always_some is must-hold"
        );
        assert_eq!(Kind::SometimesGreaterThan.score(2.0), -2.0);
        assert_eq!(Kind::AlwaysGreaterThan.score(2.0), 2.0);
    }
}
