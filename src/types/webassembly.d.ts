// Node has WebAssembly at run time, but its type declarations live in TypeScript's DOM library,
// which would bring browser globals into a Node package. Declare the part tsccl uses.
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(delta: number): number;
  }
}
