//! Parallel review, qualified by the operator and consented to by the researcher.
//!
//! A review's batch of advisory specialist tasks may run at once only on a route an operator
//! qualified with a live synthetic run ([`qualify`]), whose evidence is read from a file
//! outside the project ([`evidence`]); the gateway journals a preview of that exact batch, the
//! researcher consents to the preview's digest, and at dispatch the gateway admits it after
//! finding the preview still true ([`preparer`]). The summary every interface renders is
//! folded beside the reducer ([`crate::review_execution`]). Without the evidence the batch
//! runs one reviewer after another and no control to run it at once is offered.

pub(crate) mod dispatch;
pub mod evidence;
pub(crate) mod preparer;
pub mod qualify;

// The summary is folded by the reducer, below the review it summarizes; the command
// admission names its consent rule from here.
pub(crate) use crate::review_execution::consent_admissible;
