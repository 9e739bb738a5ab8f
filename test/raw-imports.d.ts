// Vite's `?raw` suffix imports a file's text; tests use it to load shipped examples.
declare module "*?raw" {
  const text: string;
  export default text;
}
