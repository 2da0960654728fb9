// Decoding of the documents requests carry. Every command is decoded once on its way in, so this is on
// every request's path: commands hold a handful of types (strings, numbers, ObjectIds, dates, the
// session's UUID, nested documents), which are read here directly, into exactly what decodeBson gives
// (the same classes, numbers restored the same way). Anything else, a DBRef candidate or malformed
// bytes sends the whole document to decodeBson, so rarer types and bson's errors stay bson's.
import { Binary, Double, Long, ObjectId, Timestamp, UUID } from 'bson';
import { decodeBson, isInt32, setField, type Doc } from './bson-order.js';

/** Thrown inside the direct reader when a document needs bson's own decoder. */
const BAIL = Symbol('bail');

export function decodeDocument(bytes: Buffer): Doc {
  try {
    if (bytes.length < 5 || bytes.readInt32LE(0) !== bytes.length) throw BAIL;
    const [doc, end] = readDocument(bytes, 0, false);
    if (end !== bytes.length) throw BAIL;
    return doc as Doc;
  } catch {
    // BAIL, or a read past the end of malformed bytes: bson decodes it, or gives its error.
    return decodeBson(bytes, { validation: { utf8: false } });
  }
}

/** Text of `buf[start, end)`, as bson reads it without UTF-8 validation (invalid bytes become U+FFFD). */
function text(buf: Buffer, start: number, end: number): string {
  if (end - start <= 16) {
    let s = '';
    for (let i = start; i < end; i++) {
      const c = buf[i];
      if (c >= 0x80) return buf.toString('utf8', start, end);
      s += String.fromCharCode(c);
    }
    return s;
  }
  return buf.toString('utf8', start, end);
}

function readDocument(buf: Buffer, at: number, isArray: boolean): [Doc | unknown[], number] {
  const size = buf.readInt32LE(at);
  const stop = at + size;
  if (size < 5 || stop > buf.length || buf[stop - 1] !== 0) throw BAIL;
  const out: any = isArray ? [] : {};
  let i = at + 4;
  for (;;) {
    const type = buf[i++];
    if (type === 0) break;
    const nameEnd = buf.indexOf(0, i);
    if (nameEnd < 0 || nameEnd >= stop) throw BAIL;
    const name = isArray ? '' : text(buf, i, nameEnd);
    // A document with $ref may be a DBRef, which decodeBson keeps in its own shape.
    if (name === '$ref') throw BAIL;
    i = nameEnd + 1;
    let value: unknown;
    switch (type) {
      case 0x01: {
        const d = buf.readDoubleLE(i);
        i += 8;
        value = isInt32(d) ? new Double(d) : d;
        break;
      }
      case 0x02: {
        const n = buf.readInt32LE(i);
        i += 4;
        if (n <= 0 || n > stop - i || buf[i + n - 1] !== 0) throw BAIL;
        value = text(buf, i, i + n - 1);
        i += n;
        break;
      }
      case 0x03:
      case 0x04:
        [value, i] = readDocument(buf, i, type === 0x04);
        break;
      case 0x05: {
        const n = buf.readInt32LE(i);
        const subType = buf[i + 4];
        i += 5;
        if (n < 0 || n > stop - i || subType === Binary.SUBTYPE_BYTE_ARRAY) throw BAIL;
        const binary = new Binary(buf.subarray(i, i + n), subType);
        value = subType === Binary.SUBTYPE_UUID && UUID.isValid(binary) ? binary.toUUID() : binary;
        i += n;
        break;
      }
      case 0x07:
        if (i + 12 > stop) throw BAIL;
        value = new ObjectId(buf.subarray(i, i + 12));
        i += 12;
        break;
      case 0x08:
        if (buf[i] > 1) throw BAIL;
        value = buf[i++] === 1;
        break;
      case 0x09:
        value = new Date(new Long(buf.readInt32LE(i), buf.readInt32LE(i + 4)).toNumber());
        i += 8;
        break;
      case 0x0a:
        value = null;
        break;
      case 0x10:
        value = buf.readInt32LE(i);
        i += 4;
        break;
      case 0x11:
        value = new Timestamp({ i: buf.readUInt32LE(i), t: buf.readUInt32LE(i + 4) });
        i += 8;
        break;
      case 0x12:
        value = new Long(buf.readInt32LE(i), buf.readInt32LE(i + 4));
        i += 8;
        break;
      default:
        throw BAIL;
    }
    if (i >= stop) throw BAIL;
    if (isArray) out.push(value);
    else setField(out, name, value);
  }
  if (i !== stop) throw BAIL;
  return [out, i];
}
