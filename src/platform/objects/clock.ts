/** The objects share the router's domain clock, so a test that moves it moves both. */
export { clock } from "../../lib/clock";
