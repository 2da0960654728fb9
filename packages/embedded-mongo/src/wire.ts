// MongoDB wire protocol framing: OP_MSG (sections, document sequences, moreToCome, checksum) and the
// legacy OP_QUERY/OP_REPLY pair that drivers still use for the first handshake.
import { BSON } from 'bson';
import { decodeDocument } from './bson-decode.js';
import type { Doc } from './bson-order.js';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

const CHECKSUM_PRESENT = 1;
export const MORE_TO_COME = 2;

export type Request =
  | { kind: 'msg'; requestId: number; body: Doc; moreToCome: boolean }
  | { kind: 'query'; requestId: number; collection: string; body: Doc };

function readCString(buf: Buffer, at: number): [string, number] {
  const end = buf.indexOf(0, at);
  if (end < 0) throw new Error('unterminated cstring');
  return [buf.toString('utf8', at, end), end + 1];
}

function readDoc(buf: Buffer, at: number): [Doc, number] {
  const len = buf.readInt32LE(at);
  const doc = decodeDocument(buf.subarray(at, at + len));
  return [doc, at + len];
}

/** Parses one complete message (header included). */
export function parseMessage(msg: Buffer): Request {
  const requestId = msg.readInt32LE(4);
  const opCode = msg.readInt32LE(12);
  if (opCode === OP_MSG) {
    const flags = msg.readUInt32LE(16);
    const end = flags & CHECKSUM_PRESENT ? msg.length - 4 : msg.length;
    let at = 20;
    let body: Doc | undefined;
    const sequences: Array<[string, Doc[]]> = [];
    while (at < end) {
      const kind = msg[at++];
      if (kind === 0) {
        [body, at] = readDoc(msg, at);
      } else if (kind === 1) {
        const size = msg.readInt32LE(at);
        const stop = at + size;
        const [id, start] = readCString(msg, at + 4);
        let p = start;
        const docs: Doc[] = [];
        while (p < stop) {
          let d: Doc;
          [d, p] = readDoc(msg, p);
          docs.push(d);
        }
        sequences.push([id, docs]);
        at = stop;
      } else {
        throw new Error(`unknown OP_MSG section kind ${kind}`);
      }
    }
    if (!body) throw new Error('OP_MSG without a body section');
    for (const [id, docs] of sequences) body[id] = docs;
    return { kind: 'msg', requestId, body, moreToCome: (flags & MORE_TO_COME) !== 0 };
  }
  if (opCode === OP_QUERY) {
    const [collection, afterName] = readCString(msg, 20);
    const at = afterName + 8; // skip numberToSkip, numberToReturn
    const [query] = readDoc(msg, at);
    // Legacy wrapping: { $query: {...}, $readPreference: ... }
    const body = query.$query && typeof query.$query === 'object' ? query.$query : query;
    return { kind: 'query', requestId, collection, body };
  }
  throw new Error(`unsupported opCode ${opCode}`);
}

let nextResponseId = 1;
// Replies are serialized once into this scratch buffer, then copied out in one allocation.
let scratch = Buffer.allocUnsafe(1024 * 1024);

export function encodeMsg(responseTo: number, body: Doc): Buffer {
  let end: number;
  try {
    end = BSON.serializeWithBufferAndIndex(body, scratch, { index: 21 });
  } catch {
    // Too big for the scratch buffer: grow it and retry (a genuine error throws again).
    scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, BSON.calculateObjectSize(body) + 64));
    end = BSON.serializeWithBufferAndIndex(body, scratch, { index: 21 });
  }
  const size = end + 1;
  const out = Buffer.allocUnsafe(size);
  scratch.copy(out, 0, 0, size);
  out.writeInt32LE(size, 0);
  out.writeInt32LE(nextResponseId++ & 0x7fffffff, 4);
  out.writeInt32LE(responseTo, 8);
  out.writeInt32LE(OP_MSG, 12);
  out.writeUInt32LE(0, 16);
  out[20] = 0;
  return out;
}

export function encodeReply(responseTo: number, body: Doc): Buffer {
  const payload = BSON.serialize(body);
  const header = Buffer.alloc(36);
  header.writeInt32LE(36 + payload.length, 0);
  header.writeInt32LE(nextResponseId++ & 0x7fffffff, 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(OP_REPLY, 12);
  header.writeInt32LE(0, 16); // responseFlags
  header.writeBigInt64LE(0n, 20); // cursorID
  header.writeInt32LE(0, 28); // startingFrom
  header.writeInt32LE(1, 32); // numberReturned
  return Buffer.concat([header, payload]);
}

/** Splits a byte stream into whole messages. */
export class MessageReader {
  private chunks: Buffer[] = [];
  private length = 0;
  /** Bytes needed before the next message is complete (avoids re-concatenating large messages). */
  private needed = 4;

  push(data: Buffer): Buffer[] {
    this.chunks.push(data);
    this.length += data.length;
    if (this.length < this.needed) return [];
    const out: Buffer[] = [];
    let buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.length);
    let at = 0;
    while (buf.length - at >= 4) {
      const size = buf.readInt32LE(at);
      if (size < 16 || size > 64 * 1024 * 1024) throw new Error(`invalid message length ${size}`);
      if (buf.length - at < size) break;
      out.push(buf.subarray(at, at + size));
      at += size;
    }
    buf = buf.subarray(at);
    this.needed = buf.length >= 4 ? buf.readInt32LE(0) : 4;
    this.chunks = buf.length > 0 ? [buf] : [];
    this.length = buf.length;
    return out;
  }
}
