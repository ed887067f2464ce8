// How the bytes of an input file's lines become text. By default a line is UTF-8, and a line that
// is not valid UTF-8 is read as Windows-1252, the encoding a spreadsheet on Windows saves CSV in
// (Excel's "CSV (Comma delimited)"), and counted, so the plan can say so. A caller that knows the
// file's encoding names it (`--encoding`); iconv-lite decodes it. Line by line, so reading stays
// streamed: only encodings whose line ends, commas and quotes are the ASCII bytes qualify.
import { PcdsError } from '../contract/pcds-error.js';
import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';

/** What a line that is not UTF-8 is read as, when the caller names no encoding. */
export const FALLBACK_ENCODING = 'windows-1252';

/** The character a decoder puts where bytes could not be read. */
export const UNREADABLE_CHAR = '\uFFFD';

export class EncodingError extends PcdsError {
  override name = 'EncodingError';
  constructor(message: string) {
    super('invalid_options', message);
  }
}

const SEPARATORS = '\n\r,"';

/**
 * The encoding a caller names, lower-cased, checked to be one iconv-lite knows and one that
 * keeps line ends, commas and quotes as ASCII (UTF-16 does not: save such a file as UTF-8).
 */
export function checkedEncoding(name: string): string {
  const encoding = name.trim().toLowerCase();
  const known: boolean = iconv.encodingExists(encoding);
  if (!known)
    throw new EncodingError(
      `--encoding: "${encoding}" is not an encoding this reader knows (for example utf-8, windows-1252, iso-8859-15)`,
    );
  let asciiCompatible: boolean;
  try {
    asciiCompatible =
      iconv.encode(SEPARATORS, encoding).equals(Buffer.from(SEPARATORS)) &&
      iconv.decode(Buffer.from(SEPARATORS), encoding) === SEPARATORS;
  } catch {
    asciiCompatible = false;
  }
  if (!asciiCompatible)
    throw new EncodingError(
      `--encoding: ${encoding} does not write line ends, commas and quotes as ASCII bytes: save the file as UTF-8`,
    );
  return isUtf8Name(encoding) ? 'utf-8' : encoding;
}

const isUtf8Name = (encoding: string) => encoding === 'utf8' || encoding === 'utf-8';

export interface DecodedText {
  text: string;
  /** The encoding it was read in. */
  encoding: string;
  /** Read as FALLBACK_ENCODING because it was not UTF-8 (no encoding was named). */
  fallback: boolean;
}

/**
 * Decodes lines in the named encoding, or (none named) as UTF-8 where they are valid UTF-8 and as
 * FALLBACK_ENCODING where not. Bytes the encoding cannot read become UNREADABLE_CHAR.
 */
export function lineDecoder(encoding?: string): (bytes: Buffer) => DecodedText {
  if (encoding === undefined)
    return (bytes) =>
      isUtf8(bytes)
        ? { text: bytes.toString('utf8'), encoding: 'utf-8', fallback: false }
        : {
            text: iconv.decode(bytes, FALLBACK_ENCODING),
            encoding: FALLBACK_ENCODING,
            fallback: true,
          };
  const named = checkedEncoding(encoding);
  if (named === 'utf-8')
    return (bytes) => ({ text: bytes.toString('utf8'), encoding: named, fallback: false });
  return (bytes) => ({ text: iconv.decode(bytes, named), encoding: named, fallback: false });
}
