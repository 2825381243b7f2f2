//! The command line's parts besides dispatch: arguments, output formats, progress.

pub(crate) mod args;
pub(crate) mod output;
pub(crate) mod progress;
