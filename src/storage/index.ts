export * from './types.js';
export { GridFsImageStore } from './gridfs.js';
