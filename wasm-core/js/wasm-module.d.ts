/* The Emscripten-generated ES module (build/wasm/vmsim.mjs) has no types of its own. */
declare module '*/build/wasm/vmsim.mjs' {
  const createVmsimModule: (options?: object) => Promise<unknown>;
  export default createVmsimModule;
}
