/* v86's wasm, imported as a URL (Vite hashes it into the build). */
declare module 'v86/build/v86.wasm?url' {
  const url: string;
  export default url;
}
