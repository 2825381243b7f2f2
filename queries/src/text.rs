//! Byte offsets to 1-based line numbers.

/// The byte offset at which each line starts, for turning offsets into line numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<u32>,
}

impl LineIndex {
    #[must_use]
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.bytes().enumerate().filter(|&(_, byte)| byte == b'\n').map(|(at, _)| offset(at + 1)));
        LineIndex { line_starts }
    }

    /// The 1-based line holding the byte at `offset`.
    #[must_use]
    pub fn line_of(&self, at: u32) -> u32 {
        let index = self.line_starts.partition_point(|&start| start <= at);
        offset(index)
    }
}

impl LineIndex {
    /// The 1-based line and 1-based column (in characters) of the byte at `at`.
    #[must_use]
    pub fn line_column(&self, text: &str, at: u32) -> (u32, u32) {
        let line = self.line_of(at);
        let line_start = self.line_starts[line as usize - 1] as usize;
        let at = (at as usize).min(text.len());
        let column = text.get(line_start..at).map_or(0, |prefix| prefix.chars().count());
        (line, offset(column + 1))
    }
}

/// Source files are capped far below 4 GiB by the driver, so every offset fits in a `u32`.
pub(crate) fn offset(at: usize) -> u32 {
    u32::try_from(at).expect("source files are smaller than 4 GiB")
}
