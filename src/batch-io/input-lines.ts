// The physical lines of an input file from a byte offset, with their exact byte offsets. A line
// over the row limit is measured and skipped, never held in memory; a byte-order mark is skipped
// only at the very start of the file. Callers judge the bytes (blank, BOM, encoding, format).
import { open } from 'node:fs/promises';

const BLOCK_BYTES = 1 << 16;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export interface PhysicalLine {
  /** Byte offset of the line's first byte. */
  start: number;
  /** Byte offset after its terminator. */
  end: number;
  /** Length in bytes, without the terminator. */
  size: number;
  /** The line without its terminator; absent when it is over the limit (it was not kept). */
  bytes?: Buffer;
  /** '\n', '\r\n', or '' for a last line without one. */
  eol: string;
}

/** Yields each line from `start`; lines longer than `maxLineBytes` come without their bytes. */
export async function* physicalLines(
  path: string,
  start: number,
  maxLineBytes: number,
): AsyncGenerator<PhysicalLine> {
  const fh = await open(path, 'r');
  try {
    const block = Buffer.alloc(BLOCK_BYTES);
    let position = start;
    if (start === 0) {
      const { bytesRead } = await fh.read(block, 0, BOM.length, 0);
      if (bytesRead === BOM.length && block.subarray(0, BOM.length).equals(BOM)) position = 3;
    }
    let lineStart = position;
    let parts: Buffer[] = [];
    let size = 0;
    let over = false;
    let lastByte = -1;
    const finish = (end: number, newline: boolean): PhysicalLine => {
      const cr = newline && lastByte === 0x0d;
      const length = cr ? size - 1 : size;
      const tooLarge = over || length > maxLineBytes;
      const line: PhysicalLine = {
        start: lineStart,
        end,
        size: length,
        eol: newline ? (cr ? '\r\n' : '\n') : '',
        ...(tooLarge ? {} : { bytes: Buffer.concat(parts).subarray(0, length) }),
      };
      lineStart = end;
      parts = [];
      size = 0;
      over = false;
      lastByte = -1;
      return line;
    };
    for (;;) {
      const { bytesRead } = await fh.read(block, 0, block.length, position);
      if (bytesRead === 0) break;
      const chunk = block.subarray(0, bytesRead);
      let from = 0;
      while (from < bytesRead) {
        const nl = chunk.indexOf(0x0a, from);
        const stop = nl === -1 ? bytesRead : nl;
        if (stop > from) {
          size += stop - from;
          lastByte = chunk[stop - 1];
          // One byte of slack for a '\r' before the '\n'.
          if (!over && size > maxLineBytes + 1) {
            over = true;
            parts = [];
          }
          if (!over) parts.push(Buffer.from(chunk.subarray(from, stop)));
        }
        if (nl === -1) break;
        yield finish(position + nl + 1, true);
        from = nl + 1;
      }
      position += bytesRead;
    }
    if (position > lineStart) yield finish(position, false);
  } finally {
    await fh.close();
  }
}

/** Spaces, tabs and carriage returns only (or nothing). */
export function isBlankLine(bytes: Buffer): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** Whether a line holds a byte-order mark (U+FEFF in UTF-8): files joined together. */
export const hasByteOrderMark = (bytes: Buffer): boolean => bytes.includes(BOM);

export const BYTE_ORDER_MARK_PROBLEM =
  'a byte-order mark (U+FEFF) inside the file (were files joined together?)';
