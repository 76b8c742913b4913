//! The `aws-chunked` content coding (AWS SDKs' streaming uploads: `hex-size[;chunk-signature=...]\r\n`, the
//! data, `\r\n`, ..., `0\r\n`, checksum trailers, `\r\n`) undone as the bytes arrive, so that what is scanned
//! for secrets is what S3 will store, not its framing (a secret split across two chunks is found). The size
//! lines are read by `httparse::parse_chunk_size` (the same grammar as HTTP/1.1 chunked coding).

/// The longest size line or trailer line accepted (signatures make a line about 90 bytes).
const MAX_LINE: usize = 4096;

/// Where the decoder is in the framing.
enum ChunkStage {
    /// Reading a size line.
    Size,
    /// This many data bytes to go.
    Data(u64),
    /// The `\r\n` after a chunk's data.
    DataEnd,
    /// The trailer lines after the last chunk, ending with an empty line.
    Trailers,
    /// After the final empty line: nothing more may come.
    Done,
}

/// An `aws-chunked` decoder, push-based.
pub(crate) struct AwsChunked {
    stage: ChunkStage,
    /// The line read so far (a size line, the end of data or a trailer line).
    line: Vec<u8>,
}

impl AwsChunked {
    /// A decoder at the start of a body.
    pub(crate) fn new() -> AwsChunked {
        AwsChunked {
            stage: ChunkStage::Size,
            line: Vec::new(),
        }
    }

    /// Feed framed bytes; what they carry (chunk data, then the trailer lines) goes to `out`.
    pub(crate) fn push(&mut self, mut input: &[u8], mut out: impl FnMut(Vec<u8>)) -> Result<(), String> {
        while !input.is_empty() {
            match self.stage {
                ChunkStage::Data(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                    out(input[..take].to_vec());
                    input = &input[take..];
                    let left = left - take as u64;
                    self.stage = if left == 0 {
                        ChunkStage::DataEnd
                    } else {
                        ChunkStage::Data(left)
                    };
                }
                ChunkStage::Done => return Err("bytes after the end of the aws-chunked body".into()),
                _ => {
                    let Some(end) = input.iter().position(|b| *b == b'\n') else {
                        self.take_line(input)?;
                        return Ok(());
                    };
                    self.take_line(&input[..=end])?;
                    input = &input[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_done(line, &mut out)?;
                }
            }
        }
        Ok(())
    }

    fn take_line(&mut self, part: &[u8]) -> Result<(), String> {
        if self.line.len() + part.len() > MAX_LINE {
            return Err(format!("an aws-chunked framing line is longer than {MAX_LINE} bytes"));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    /// A whole line (with its `\n`) in the current stage.
    fn line_done(&mut self, line: Vec<u8>, out: &mut impl FnMut(Vec<u8>)) -> Result<(), String> {
        match self.stage {
            ChunkStage::Size => match httparse::parse_chunk_size(&line) {
                Ok(httparse::Status::Complete((_, 0))) => self.stage = ChunkStage::Trailers,
                Ok(httparse::Status::Complete((_, size))) => self.stage = ChunkStage::Data(size),
                _ => return Err("an aws-chunked size line does not parse".into()),
            },
            ChunkStage::DataEnd if line == b"\r\n" => self.stage = ChunkStage::Size,
            ChunkStage::DataEnd => return Err("an aws-chunked chunk is longer than its size says".into()),
            ChunkStage::Trailers if line == b"\r\n" => self.stage = ChunkStage::Done,
            ChunkStage::Trailers => out(line),
            ChunkStage::Data(_) | ChunkStage::Done => {}
        }
        Ok(())
    }

    /// The end of the body: it must have ended where the framing says.
    pub(crate) fn finish(self) -> Result<Vec<u8>, String> {
        match self.stage {
            ChunkStage::Done => Ok(Vec::new()),
            // Some clients end after the last chunk's trailers without the final empty line.
            ChunkStage::Trailers if self.line.is_empty() => Ok(Vec::new()),
            _ => Err("the aws-chunked body ends before its last chunk".into()),
        }
    }
}

#[cfg(test)]
#[path = "aws_chunked_tests.rs"]
mod tests;
