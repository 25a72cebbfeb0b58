//! The Keys screen's rows: each key as [`key_overview`] lists it, with its
//! reach in words ([`reach::describe_key`], the wording `whoami` and
//! `keys list` use), its restrictions as the key form shows them, and its
//! usage: the last call, calls by tool over the day and week, refusals, and
//! calls per day for the chart.

use serde::Serialize;

use super::key_form::RestrictionForm;
use super::reach::{self, Reach};
use crate::access::key_overview::{self, KeyFilter, KeyOverview};
use crate::access::key_usage::{self, KeyUsage};
use crate::access::usage_days::{self, DayUsage};
use crate::error::Result;
use crate::store::Store;
use crate::time::now_ms;

/// One key, everything the Keys screen shows of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct KeyReport {
    #[serde(flatten)]
    #[ts(flatten)]
    pub key: KeyOverview,
    pub reach: Reach,
    /// The key's restrictions as the edit form starts.
    pub form: RestrictionForm,
    pub usage: KeyUsage,
    /// Calls per day over the last week, oldest first (always seven).
    pub days: Vec<DayUsage>,
}

/// Every key matching `filter`, with reach and usage.
pub async fn list(store: &Store, filter: KeyFilter) -> Result<Vec<KeyReport>> {
    let now = now_ms();
    let keys = key_overview::list(store, filter).await?;
    let mut usage = key_usage::by_key(store, now).await?;
    let mut days = usage_days::by_key(store, now).await?;
    Ok(keys
        .into_iter()
        .map(|key| KeyReport {
            reach: reach::describe_key(&key.info),
            form: RestrictionForm::of(&key.info.restrictions),
            usage: usage.remove(&key.info.id).unwrap_or_default(),
            days: days
                .remove(&key.info.id)
                .unwrap_or_else(|| usage_days::empty_week(now)),
            key,
        })
        .collect())
}
